//! A report built once ([`crate::report::doc`]) written into the page: a section's heading
//! with its anchor, a paragraph `<p>`, an aside a banner, a list `<ul>`, a table as every
//! table of the page, a chart drawn inline.

use super::markup::{Cell, Page};
use crate::report::chart::Inline;
use crate::report::doc::{Block, Section, Span};

/// A section with its anchor, its blocks, and the charts they show (a chart not drawn is
/// left out).
pub(super) fn write(p: &mut Page, sec: &Section, charts: &[Inline]) {
    p.section(&sec.id, &sec.title);
    blocks(p, &sec.blocks, charts);
    p.raw("</section>\n");
}

/// Blocks into the page, with no section of their own.
pub(super) fn blocks(p: &mut Page, blocks_: &[Block], charts: &[Inline]) {
    // Running text between its element's tags.
    let line = |p: &mut Page, open: &'static str, text: &[Span], close: &'static str| {
        p.raw(open);
        spans(p, text);
        p.raw(close);
    };
    for b in blocks_ {
        match b {
            Block::Heading(t) => {
                p.raw("<h3>").inline(t).raw("</h3>\n");
            }
            Block::Para(text) => line(p, "<p>", text, "</p>\n"),
            Block::Quote(text) => line(p, "<p class=\"banner\">", text, "</p>\n"),
            Block::List(items) if items.is_empty() => {}
            Block::List(items) => {
                p.raw("<ul>\n");
                items.iter().for_each(|item| line(p, "<li>", item, "</li>\n"));
                p.raw("</ul>\n");
            }
            Block::Outline(items) => {
                p.raw("<ul>\n");
                for (item, sub) in items {
                    p.raw("<li>");
                    spans(p, item);
                    if !sub.is_empty() {
                        p.raw("\n<ul>\n");
                        sub.iter().for_each(|s| line(p, "<li>", s, "</li>\n"));
                        p.raw("</ul>\n");
                    }
                    p.raw("</li>\n");
                }
                p.raw("</ul>\n");
            }
            Block::Table(t) => {
                let rows: Vec<Vec<Cell>> = t.rows.iter().map(|r| r.iter().map(|c| marked(c)).collect()).collect();
                let columns: Vec<(&str, _)> = t.columns.iter().map(|(n, a)| (n.as_str(), *a)).collect();
                p.table(&columns, &rows);
            }
            Block::Charts(wanted) => {
                for c in wanted.iter().filter_map(|w| charts.iter().find(|c| c.stem == w.stem)) {
                    p.chart(c);
                }
            }
            Block::Fold { summary, open, blocks: inner, .. } => {
                p.raw(if *open { "<details open><summary>" } else { "<details><summary>" });
                p.text(summary).raw("</summary>\n");
                blocks(p, inner, charts);
                p.raw("</details>\n");
            }
        }
    }
}

/// The stems of the charts `blocks` show.
pub(super) fn charts(blocks: &[Block]) -> Vec<&str> {
    blocks
        .iter()
        .flat_map(|b| match b {
            Block::Charts(cs) => cs.iter().map(|c| c.stem.as_str()).collect(),
            Block::Fold { blocks, .. } => charts(blocks),
            _ => Vec::new(),
        })
        .collect()
}

/// A cell coloured by its marks when they agree: only ✅ passed, only ❌ failed; a cell with
/// both (a row of points, some met and some missed) is left plain, each mark coloured alone.
fn marked(text: &str) -> Cell {
    let class = match (text.contains('✅'), text.contains('❌')) {
        (true, false) => "pass",
        (false, true) => "fail",
        _ => "",
    };
    Cell::with(text, class)
}

fn spans(p: &mut Page, line: &[Span]) {
    for s in line {
        match s {
            Span::Text(t) => p.text(t),
            Span::Strong(t) => p.el("strong", "", t),
            Span::Code(t) => p.el("code", "", t),
            Span::StrongCode(t) => p.raw("<strong>").el("code", "", t).raw("</strong>"),
            Span::Mark(true) => p.el("span", "pass", "pass"),
            Span::Mark(false) => p.el("span", "fail", "FAIL"),
            Span::Inline(t) => p.inline(t),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::doc::Table;

    #[test]
    fn a_section_is_its_blocks_escaped_with_strong_and_code() {
        let sec = Section {
            id: "s".into(),
            nav: "s".into(),
            title: "Title".into(),
            blocks: vec![
                Block::Para(vec![Span::Text("a <b> ".into()), Span::Code("x&y".into())]),
                Block::List(vec![vec![Span::Strong("case".into()), Span::Text(" limits".into())]]),
                Block::List(vec![]),
                Block::Fold {
                    summary: "1 <of> 1".into(),
                    open: false,
                    in_markdown: false,
                    blocks: vec![Block::List(vec![vec![Span::Mark(false)]])],
                },
                Block::Table(Table::new(">n", vec![vec!["1".into()]])),
            ],
        };
        let mut p = Page::default();
        write(&mut p, &sec, &[]);
        let html = p.finish();
        assert!(
            html.starts_with("<section id=\"s\">\n<h2>Title</h2>\n<p>a &lt;b&gt; <code>x&amp;y</code></p>\n"),
            "{html}"
        );
        assert!(html.contains("<ul>\n<li><strong>case</strong> limits</li>\n</ul>\n<details>"), "{html}");
        assert!(html.contains("<details><summary>1 &lt;of&gt; 1</summary>\n<ul>\n<li><span class=\"fail\">FAIL</span></li>\n</ul>\n</details>\n"), "{html}");
        assert!(html.ends_with("</table></div>\n</section>\n"), "{html}");
    }

    #[test]
    fn a_cell_is_coloured_only_when_its_marks_agree() {
        let class = |t: &str| marked(t).class;
        assert_eq!(class("✅ 5/5"), "pass");
        assert_eq!(class("❌ 3/5"), "fail");
        assert_eq!(class("✅ 5/5 · rollout ❌ 0/2"), "", "mixed: each mark says its own");
        assert_eq!(class("production as built"), "");
    }
}
