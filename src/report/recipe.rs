//! The throwaway output the output recipe is tried with (in [`super::publish::OUTPUTS`] in
//! test builds only; `src/app/recipes.rs` runs it): `calls.txt`, each finished case's completed calls.

use super::output::{Input, Moment, Output, Staged, WriteError};

pub(crate) struct CallsTxt;

impl Output<Input<'_>> for CallsTxt {
    fn name(&self) -> &'static str {
        "calls.txt"
    }

    fn written_at(&self, moment: Moment) -> bool {
        matches!(moment, Moment::Case | Moment::End)
    }

    fn essential(&self) -> bool {
        false
    }

    fn write(&self, input: &Input<'_>, out: &mut Staged) -> Result<(), WriteError> {
        let lines: String =
            input.summary().results.iter().map(|r| format!("{} {}\n", r.case, r.calls.completed)).collect();
        out.put("calls.txt", lines.as_bytes())
    }
}
