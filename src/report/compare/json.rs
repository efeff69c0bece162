//! The comparison as JSON, for a CI step to read: the shape `reports/compare.schema.json`
//! describes, `schema_version` 1.

use serde::Serialize;

use super::Comparison;

/// The version of the comparison's JSON.
pub(crate) const SCHEMA_VERSION: u32 = 1;

#[derive(Serialize)]
struct Document<'a> {
    schema_version: u32,
    tool: crate::results::summary::Tool,
    regressions: usize,
    improvements: usize,
    /// No regression, and no case of OLD missing from NEW.
    pass: bool,
    #[serde(flatten)]
    comparison: &'a Comparison,
}

pub(super) fn render(c: &Comparison) -> String {
    let doc = Document {
        schema_version: SCHEMA_VERSION,
        tool: crate::results::summary::Summary::tool(),
        regressions: c.regressions(),
        improvements: c.improvements(),
        pass: !c.fails(),
        comparison: c,
    };
    let mut text = serde_json::to_string_pretty(&doc).expect("a comparison is plain data");
    text.push('\n');
    text
}
