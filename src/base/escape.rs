//! Text made safe inside markup: HTML (report.html), Markdown and XML attributes (JUnit).

use std::borrow::Cow;

/// `s` made safe as HTML text and as a quoted attribute value.
pub(crate) fn html(s: &str) -> Cow<'_, str> {
    escape_as(s, true, false)
}

/// Text made safe for Markdown: `&`, `<` and `>` as entities. A report's text comes from
/// untrusted places (a relay file name a sandbox planted, a graded program's stderr and
/// answers, a summary.json anyone can edit): none of it may pass as raw HTML into a page
/// that renders the Markdown (a CI job summary, a pull request).
pub(crate) fn markdown(s: &str) -> Cow<'_, str> {
    escape_as(s, false, false)
}

/// `s` made safe as an XML 1.0 attribute value (JUnit): the five entities escaped, a line
/// break and a tab kept as character references, the other characters XML forbids dropped.
pub(crate) fn xml_attr(s: &str) -> Cow<'_, str> {
    escape_as(s, true, true)
}

/// `s` with `&`, `<` and `>` escaped, and the quotes too if `quotes`, for XML if `xml_attr`.
fn escape_as(s: &str, quotes: bool, xml_attr: bool) -> Cow<'_, str> {
    let special = |c: char| {
        matches!(c, '&' | '<' | '>') || (quotes && matches!(c, '"' | '\'')) || (xml_attr && (c as u32) < 0x20)
    };
    if !s.contains(special) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if quotes => out.push_str("&quot;"),
            '\'' if xml_attr => out.push_str("&apos;"),
            '\'' if quotes => out.push_str("&#39;"),
            '\n' if xml_attr => out.push_str("&#10;"),
            '\t' if xml_attr => out.push_str("&#9;"),
            c if xml_attr && (c as u32) < 0x20 => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}
