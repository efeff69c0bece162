//! A report's section as content, built once and written in each dialect: summary.md's
//! Markdown here ([`markdown`]), report.html's by `html::doc`. A section built as a
//! [`Section`] says the same in both files, and a new one is written once: its blocks
//! (paragraphs, lists, tables) from the summary, nothing about either format.
//!
//! The Markdown is GitHub's: a heading `## Title`, each block after a blank line, a list
//! item `- ` a line, tables through [`MdTable`] (cells escaped).

use crate::base::escape::markdown as escape;
use std::fmt::Write;

mod gfm;
#[cfg(test)]
pub(crate) use gfm::tests as gfm_tests;
pub(crate) use gfm::{Align, MdTable};

/// A piece of running text: plain, strong (`**x**`, `<strong>`), code (`` `x` ``, `<code>`),
/// whether something held (✅ or ❌; in the page, a coloured `pass` or `FAIL`), or text
/// written in Markdown's inline syntax ([`Span::Inline`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Span {
    Text(String),
    Strong(String),
    Code(String),
    /// Strong code (`` **`x`** ``, `<strong><code>`): a name a block is about.
    StrongCode(String),
    Mark(bool),
    /// Text whose `**x**` pieces are strong and `` `x` `` pieces code, as a table cell is
    /// written: summary.md takes it as it is, the page renders both.
    Inline(String),
}

/// Running text: its spans in order.
pub(crate) type Line = Vec<Span>;

/// Whether something held, as a table cell or inline text writes it: ✅ or ❌ (the page
/// colours both, as it does [`Span::Mark`]).
pub(crate) fn mark(held: bool) -> &'static str {
    if held {
        "✅"
    } else {
        "❌"
    }
}

/// Plain text as a [`Line`].
pub(crate) fn plain(text: impl Into<String>) -> Line {
    vec![Span::Text(text.into())]
}

/// Text with `**strong**` and `` `code` `` pieces as a [`Line`] ([`Span::Inline`]).
pub(crate) fn inline(text: impl Into<String>) -> Line {
    vec![Span::Inline(text.into())]
}

/// A table: its columns and their alignment, and its rows (a cell per column; a cell is
/// written as [`Span::Inline`] text, coloured in the page when its ✅ or ❌ marks agree).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Table {
    pub columns: Vec<(String, Align)>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// A table of `rows` under the columns `spec` names, `|` between them, a right-aligned one
    /// marked `>` (`"case|>calls|>lost"`).
    pub(crate) fn new(spec: &str, rows: impl IntoIterator<Item = Vec<String>>) -> Table {
        let columns = spec.split('|').map(|n| match n.strip_prefix('>') {
            Some(n) => (n.to_owned(), Align::Right),
            None => (n.to_owned(), Align::Left),
        });
        Table { columns: columns.collect(), rows: rows.into_iter().collect() }
    }
}

/// A chart drawn beside the report (`charts/<stem>.png` and `.svg`): summary.md links it,
/// the page draws it inline.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Chart {
    pub stem: String,
    pub title: String,
}

/// One block of a section.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Block {
    /// A heading inside a section (`### x`, `<h3>`).
    Heading(String),
    Para(Line),
    /// An aside set off from the text around it (`> x`; a banner in the page).
    Quote(Line),
    /// A bulleted list, an item a line (an empty list writes nothing).
    List(Vec<Line>),
    /// A bulleted list whose items may hold items of their own, one level down (`  - x`).
    Outline(Vec<(Line, Vec<Line>)>),
    Table(Table),
    /// Charts, each on its own line.
    Charts(Vec<Chart>),
    /// Blocks a reader opens when they want them: folded under `summary` in the page
    /// (`<details>`, unfolded when `open`). Markdown has no fold of its own: the blocks are
    /// written as they are, or in GitHub's `<details>` when `in_markdown` (a comment a
    /// pull request shows, where a long table is better folded).
    Fold {
        summary: String,
        open: bool,
        in_markdown: bool,
        blocks: Vec<Block>,
    },
}

/// A section: its anchor in the page and its name in the page's nav, its heading (written
/// as [`Span::Inline`] text) and its blocks.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Section {
    pub id: String,
    pub nav: String,
    pub title: String,
    pub blocks: Vec<Block>,
}

impl Section {
    /// A section named in the nav by its anchor in words (`along-the-way`: "along the way").
    pub(crate) fn new(id: impl Into<String>, title: impl Into<String>, blocks: Vec<Block>) -> Section {
        let id = id.into();
        Section { nav: id.replace('-', " "), id, title: title.into(), blocks }
    }
}

/// A report's rollout verdict: its section, whether production as built met it, and where
/// summary.md writes it. The page puts it under its header wherever it is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Verdict {
    pub section: Section,
    pub held: bool,
}

/// A whole report: its title and what the run came to, its rollout verdict, the blocks before
/// the first section (what the run was, where and how it ran), and the sections.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Doc {
    pub title: String,
    /// `PASS`, `FAIL` or `INTERRUPTED`, and whether it passed.
    pub outcome: (&'static str, bool),
    pub verdict: Option<Verdict>,
    pub lead: Vec<Block>,
    pub sections: Vec<Section>,
}

/// The whole report in Markdown: `# title — outcome`, the verdict, the lead, the sections.
pub(crate) fn document(d: &Doc) -> String {
    let mut o = format!("# {} — {}\n", escape_inline(&d.title), d.outcome.0);
    if let Some(v) = &d.verdict {
        markdown(&mut o, &v.section);
    }
    blocks(&mut o, &d.lead);
    for sec in &d.sections {
        markdown(&mut o, sec);
    }
    o
}

/// The section in Markdown: a blank line, its heading, then each block after a blank line.
pub(crate) fn markdown(o: &mut String, sec: &Section) {
    let _ = writeln!(o, "\n## {}", escape_inline(&sec.title));
    blocks(o, &sec.blocks);
}

/// Blocks in Markdown, each after a blank line, with no heading of their own (a part of
/// a section another writer heads).
pub(crate) fn blocks(o: &mut String, blocks_: &[Block]) {
    // A line of text after its marker (`> `, `- `, `  - `).
    let line = |o: &mut String, marker: &str, text: &[Span]| {
        o.push_str(marker);
        spans(o, text);
        o.push('\n');
    };
    for b in blocks_ {
        if !matches!(b, Block::Fold { in_markdown: false, .. }) {
            o.push('\n');
        }
        match b {
            Block::Heading(t) => {
                let _ = writeln!(o, "### {}", escape_inline(t));
            }
            Block::Para(text) => line(o, "", text),
            Block::Quote(text) => line(o, "> ", text),
            Block::List(items) => items.iter().for_each(|item| line(o, "- ", item)),
            Block::Outline(items) => {
                for (item, sub) in items {
                    line(o, "- ", item);
                    sub.iter().for_each(|s| line(o, "  - ", s));
                }
            }
            Block::Table(t) => {
                let columns: Vec<(&str, Align)> = t.columns.iter().map(|(n, a)| (n.as_str(), *a)).collect();
                let mut md = MdTable::new(o, &columns);
                for row in &t.rows {
                    md.row(row);
                }
            }
            Block::Charts(charts) => {
                for (k, c) in charts.iter().enumerate() {
                    let gap = if k == 0 { "" } else { "\n" };
                    let (title, stem) = (escape(&c.title), &c.stem);
                    let _ = writeln!(o, "{gap}![{title}](charts/{stem}.png) ([SVG](charts/{stem}.svg))");
                }
            }
            Block::Fold { summary, in_markdown: true, blocks: inner, .. } => {
                let _ = writeln!(o, "<details><summary>{}</summary>", escape(summary));
                blocks(o, inner);
                o.push_str("\n</details>\n");
            }
            Block::Fold { blocks: inner, .. } => blocks(o, inner),
        }
    }
}

fn spans(o: &mut String, line: &[Span]) {
    for s in line {
        match s {
            Span::Text(t) => o.push_str(&escape(t)),
            Span::Inline(t) => o.push_str(&escape_inline(t)),
            Span::Strong(t) => {
                let _ = write!(o, "**{}**", escape(t));
            }
            Span::Code(t) => o.push_str(&code(t)),
            Span::StrongCode(t) => {
                let _ = write!(o, "**{}**", code(t));
            }
            Span::Mark(held) => o.push_str(mark(*held)),
        }
    }
}

/// [`escape`] for text with `` `code` `` pieces ([`Span::Inline`], a table cell): outside
/// the code spans only, which show their text as it is (an entity there would be shown as
/// one, not as its character).
pub(crate) fn escape_inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('`') {
        out.push_str(&escape(&rest[..start]));
        let ticks = rest[start..].len() - rest[start..].trim_start_matches('`').len();
        let body = &rest[start + ticks..];
        // Closed by the next run of exactly as many backticks; else the backticks are text.
        match closing(body, ticks) {
            Some(end) => {
                out.push_str(&rest[start..start + ticks + end + ticks]);
                rest = &body[end + ticks..];
            }
            None => {
                out.push_str(&rest[start..start + ticks]);
                rest = body;
            }
        }
    }
    out.push_str(&escape(rest));
    out
}

/// Where in `body` a run of exactly `ticks` backticks starts, if one does.
fn closing(body: &str, ticks: usize) -> Option<usize> {
    let mut at = 0;
    while let Some(i) = body[at..].find('`') {
        let start = at + i;
        let run = body[start..].len() - body[start..].trim_start_matches('`').len();
        if run == ticks {
            return Some(start);
        }
        at = start + run;
    }
    None
}

/// A code span holding `text` as it is: fenced by more backticks than any run inside it,
/// so a backtick in the text cannot end the span and let what follows pass as Markdown.
pub(crate) fn code(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    if longest == 0 {
        return format!("`{text}`");
    }
    let fence = "`".repeat(longest + 1);
    format!("{fence} {text} {fence}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_from_untrusted_text_is_escaped_outside_code_and_a_code_span_holds_its_backticks() {
        let bad = "<img src=x onerror=alert(1)> & <script>";
        let sec = Section::new(
            "s",
            format!("case `{bad}` {bad}"),
            vec![
                Block::Para(vec![Span::Text(bad.into()), Span::Strong(bad.into()), Span::Code(bad.into())]),
                Block::Table(Table::new("a", vec![vec![format!("`{bad}` {bad}")]])),
                Block::Heading(bad.into()),
                Block::Para(vec![Span::Code("a` <b> `c".into())]),
            ],
        );
        let mut o = String::new();
        markdown(&mut o, &sec);
        let safe = "&lt;img src=x onerror=alert(1)&gt; &amp; &lt;script&gt;";
        assert_eq!(
            o,
            format!(
                "\n## case `{bad}` {safe}\n\n{safe}**{safe}**`{bad}`\n\n| a |\n|---|\n| `{bad}` {safe} |\n\n### {safe}\n\n`` a` <b> `c ``\n"
            )
        );
        // Every `<` GFM would read as HTML is inside a code span.
        let html = pulldown_cmark::Parser::new_ext(&o, pulldown_cmark::Options::ENABLE_TABLES)
            .filter(|e| matches!(e, pulldown_cmark::Event::Html(_) | pulldown_cmark::Event::InlineHtml(_)))
            .count();
        assert_eq!(html, 0, "{o}");
        assert_eq!(escape_inline("a `x` `b"), "a `x` `b", "an unclosed backtick is text");
        assert_eq!(escape_inline("``a`<b>``c<"), "``a`<b>``c&lt;");
    }

    #[test]
    fn a_section_is_its_heading_then_each_block_after_a_blank_line() {
        let sec = Section {
            id: "s".into(),
            nav: "s".into(),
            title: "Title".into(),
            blocks: vec![
                Block::Para(vec![Span::Text("with ".into()), Span::Code("code".into()), Span::Text(":".into())]),
                Block::Table(Table::new("a|>n", vec![vec!["x|y".into(), "1".into()]])),
                Block::List(vec![vec![Span::Strong("case".into()), Span::Text(" limits".into())], plain("two")]),
                Block::List(vec![]),
                Block::Fold {
                    summary: "folded".into(),
                    open: false,
                    in_markdown: false,
                    blocks: vec![Block::List(vec![vec![Span::Mark(false), Span::Text(" x".into())]])],
                },
            ],
        };
        let mut o = String::new();
        markdown(&mut o, &sec);
        assert_eq!(
            o,
            "\n## Title\n\nwith `code`:\n\n| a | n |\n|---|---:|\n| x\\|y | 1 |\n\n- **case** limits\n- two\n\n\n- ❌ x\n"
        );
    }
}
