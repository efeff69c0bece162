//! The measures' names: summary.json keys, unique, lower case.

use super::Measure;

#[test]
fn measure_names_are_unique_lower_case_keys_in_their_order() {
    let mut names: Vec<&str> = Measure::ALL.iter().map(|m| m.name()).collect();
    assert!(names
        .iter()
        .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')));
    assert_eq!(Measure::ALL.iter().map(|m| m.index()).collect::<Vec<_>>(), (0..Measure::ALL.len()).collect::<Vec<_>>());
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), Measure::ALL.len(), "a measure's name is its summary.json key: unique");
}
