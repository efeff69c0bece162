//! The storms of `read-fails` faults, a table under the faults' own: how long each struck
//! request stayed on disk, the struck dir's request rate and windows armed before the fault
//! and while it stormed, and what the organisation's other sandboxes met meanwhile.

use super::us;
use crate::report::doc::{plain, Block, Table};
use crate::results::summary::Summary;
use crate::scenario::storm::StormRow;

const INTRO: &str = "A storm runs from the first failed read until the struck request is gone (the first \
     daemon request after its delete). Rates are per second of relay life: the struck dir's before is from its \
     relay's start to the strike. The others are the organisation's other sandboxes: their requests its \
     limits rejected per second before the strike and while it stormed, their turns demoted while it \
     stormed, and the worst pickup of their calls whose life overlapped the fault or the 60 s after it.";

/// `before → during (×ratio)`.
fn rates(before: f64, during: f64, ratio: Option<f64>) -> String {
    let ratio = ratio.map_or(String::new(), |r| format!(" ({r}×)"));
    format!("{before:.2} → {during:.2}{ratio}")
}

fn stormed(st: &StormRow) -> String {
    match (st.from_secs, st.until_secs) {
        (None, _) => "no request was read while it struck".into(),
        (Some(a), Some(b)) => {
            format!("{a:.2} s → {b:.2} s ({:.2} s; {:.2} s of relay life)", st.lasted_secs, st.stormed_secs)
        }
        (Some(a), None) => format!(
            "{a:.2} s → still on disk at the end ({:.2} s; {:.2} s of relay life)",
            st.lasted_secs, st.stormed_secs
        ),
    }
}

/// The requests of a storm by kind, those it made at all.
fn by_kind(st: &StormRow) -> String {
    let kinds: Vec<String> = st.by_kind.0.iter().filter(|(_, n)| *n > 0).map(|(k, n)| format!("{k} {n}")).collect();
    if kinds.is_empty() {
        "-".into()
    } else {
        kinds.join(", ")
    }
}

/// The storms' table, if a fault of the run stormed.
pub(super) fn blocks(s: &Summary) -> Vec<Block> {
    let rows: Vec<Vec<String>> = s
        .results
        .iter()
        .flat_map(|r| r.faults.iter().filter_map(move |f| Some((r, f, f.storm.as_ref()?))))
        .map(|(r, f, st)| {
            let (req, win) = st.ratios();
            let demoted = st.demoted_after_secs.map_or(String::new(), |d| format!("; its watch demoted after {d} s"));
            vec![
                r.case.clone(),
                format!(
                    "{} ({} read(s) failed, {} answer write(s)){demoted}",
                    f.sandbox, st.reads_failed, st.answers_failed
                ),
                stormed(st),
                rates(st.before_per_sec, st.per_sec, req),
                rates(st.before_execs_per_sec, st.execs_per_sec, win),
                by_kind(st),
                format!("{} / {}", st.rejected, st.others_rejected),
                rates(st.others_rejected_per_sec_before, st.others_rejected_per_sec, None),
                format!("{} (before: {})", st.others_demoted, st.others_demoted_before),
                st.others_worst_pickup_ms.map_or("-".into(), |ms| us(ms * 1000.0)),
            ]
        })
        .collect();
    if rows.is_empty() {
        return Vec::new();
    }
    let table = Table::new("case|struck sandbox|stormed|>requests/s: before → during|>windows/s: before → during|its requests while it stormed|>rejected: its / the others'|>others' rejections/s: before → during|>others' turns demoted|>others' worst pickup", rows);
    vec![Block::Para(plain(INTRO)), Block::Table(table)]
}
