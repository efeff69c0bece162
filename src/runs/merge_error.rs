//! Why `merge` refused its parts or could not write the merged run.

/// Parts that do not make one run, or a merged run that could not be written.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("{dir}: not a part of a split run (its summary.json has no `shard`); give the run directories `run --shard K/N` wrote")]
    NotAPart { dir: String },
    #[error(
        "{dir}: its {what} is a part of another run than {first}'s (the scenario's text, its overrides, the \
         number of parts or relay-bench's version differ): give the parts of one run"
    )]
    OtherRun { dir: String, first: String, what: String },
    #[error("part {index} of {count} is given twice: {first} and {second}")]
    Twice { index: u32, count: u32, first: String, second: String },
    #[error("part(s) {missing} of {count} not given: give every part's run directory")]
    Missing { missing: String, count: u32 },
    #[error("--out {0} is one of the parts: give a directory of its own for the merged run")]
    OutIsAPart(String),
    #[error("{path}: cannot copy a part's file into the merged run: {source}")]
    Copy { path: String, source: std::io::Error },
}
