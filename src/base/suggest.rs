//! "Did you mean": the closest of a set of known names to one a person typed, by edit
//! distance (insertions, deletions, substitutions and swaps of two neighbours, each 1), when
//! it is close enough to be a typo rather than another word.

/// The known name closest to `typed`, if it is within a typo of it: at most one edit for a
/// name of up to 4 characters, two up to 8, three beyond. Case is ignored; a tie goes to the
/// first candidate.
pub(crate) fn closest<'a>(typed: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let typed_l = typed.to_lowercase();
    let budget = match typed.chars().count() {
        0 => return None,
        1..=4 => 1,
        5..=8 => 2,
        _ => 3,
    };
    let mut best: Option<(usize, &str)> = None;
    for k in known {
        let d = distance(&typed_l, &k.to_lowercase());
        if d == 0 && k == typed {
            return None;
        }
        if d <= budget && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, k));
        }
    }
    best.map(|(_, k)| k)
}

/// ` (did you mean "NAME"?)` for an error message, or nothing.
pub(crate) fn did_you_mean<'a>(typed: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    closest(typed, known).map(|k| format!(" (did you mean {k:?}?)")).unwrap_or_default()
}

/// The optimal-string-alignment distance between `a` and `b` (in characters).
pub(crate) fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let w = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * w];
    for i in 0..=a.len() {
        d[i * w] = i;
    }
    for (j, cell) in d.iter_mut().enumerate().take(w) {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[(i - 1) * w + j] + 1).min(d[i * w + j - 1] + 1).min(d[(i - 1) * w + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[(i - 2) * w + j - 2] + 1);
            }
            d[i * w + j] = v;
        }
    }
    d[a.len() * w + b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_count_one_each_and_a_swap_is_one() {
        assert_eq!(distance("", ""), 0);
        assert_eq!(distance("abc", ""), 3);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("pickup", "pikcup"), 1, "a swap of neighbours");
        assert_eq!(distance("rollout-gate", "rolout-gate"), 1);
    }

    #[test]
    fn a_typo_is_matched_and_another_word_is_not() {
        let known = ["default", "rollout-gate", "request-budget", "faults", "clock-check"];
        assert_eq!(closest("rolout-gate", known), Some("rollout-gate"));
        assert_eq!(closest("Faults", known), Some("faults"), "case is ignored");
        assert_eq!(closest("fault", known), Some("faults"));
        assert_eq!(closest("throughput", known), None);
        assert_eq!(closest("x", known), None);
        assert_eq!(closest("faults", known), None, "an exact name needs no suggestion");
        assert_eq!(did_you_mean("clok-check", known), " (did you mean \"clock-check\"?)");
        assert_eq!(did_you_mean("zzz", known), "");
    }
}
