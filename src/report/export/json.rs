//! `summary.json`: the machine-readable result (see `Summary` for the fields).

use crate::report::output::{Input, Moment, Output, Staged, WriteError};
use crate::results::summary::Summary;

pub(crate) struct Json;

impl Json {
    pub(crate) fn render(&self, summary: &Summary) -> Vec<u8> {
        let mut v = serde_json::to_vec_pretty(summary).expect("a summary always serializes");
        v.push(b'\n');
        v
    }
}

impl Output<Input<'_>> for Json {
    fn name(&self) -> &'static str {
        "summary.json"
    }

    fn written_at(&self, moment: Moment) -> bool {
        moment != Moment::Rerender // it is what a re-render reads
    }

    fn write(&self, input: &Input<'_>, out: &mut Staged) -> Result<(), WriteError> {
        out.put("summary.json", &self.render(input.summary()))
    }
}
