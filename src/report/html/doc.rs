//! A [`Section`] built once ([`crate::report::doc`]) written into the page: its heading
//! with its anchor, a paragraph `<p>`, a list `<ul>`, a table as every table of the page.

use super::markup::{Cell, Page};
use crate::report::doc::{Block, Section, Span};

pub(super) fn write(p: &mut Page, sec: &Section) {
    p.section(sec.id, sec.title);
    blocks(p, &sec.blocks);
    p.raw("</section>\n");
}

/// Blocks into the page, with no section of their own.
pub(super) fn blocks(p: &mut Page, blocks_: &[Block]) {
    for b in blocks_ {
        match b {
            Block::Heading(t) => {
                p.el("h3", "", t).raw("\n");
            }
            Block::Para(line) => {
                p.raw("<p>");
                spans(p, line);
                p.raw("</p>\n");
            }
            Block::List(items) if items.is_empty() => {}
            Block::List(items) => {
                p.raw("<ul>\n");
                for item in items {
                    p.raw("<li>");
                    spans(p, item);
                    p.raw("</li>\n");
                }
                p.raw("</ul>\n");
            }
            Block::Table(t) => {
                let rows: Vec<Vec<Cell>> =
                    t.rows.iter().map(|r| r.iter().map(|c| Cell::from(c.as_str())).collect()).collect();
                p.table(&t.columns, &rows);
            }
            Block::Fold { summary, open, blocks: inner } => {
                p.raw(if *open { "<details open><summary>" } else { "<details><summary>" });
                p.text(summary).raw("</summary>\n");
                blocks(p, inner);
                p.raw("</details>\n");
            }
        }
    }
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
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::doc::Table;
    use crate::report::export::Align;

    #[test]
    fn a_section_is_its_blocks_escaped_with_strong_and_code() {
        let sec = Section {
            id: "s",
            title: "Title",
            blocks: vec![
                Block::Para(vec![Span::Text("a <b> ".into()), Span::Code("x&y".into())]),
                Block::List(vec![vec![Span::Strong("case".into()), Span::Text(" limits".into())]]),
                Block::List(vec![]),
                Block::Fold {
                    summary: "1 <of> 1".into(),
                    open: false,
                    blocks: vec![Block::List(vec![vec![Span::Mark(false)]])],
                },
                Block::Table(Table { columns: vec![("n", Align::Right)], rows: vec![vec!["1".into()]] }),
            ],
        };
        let mut p = Page::default();
        write(&mut p, &sec);
        let html = p.finish();
        assert!(
            html.starts_with("<section id=\"s\">\n<h2>Title</h2>\n<p>a &lt;b&gt; <code>x&amp;y</code></p>\n"),
            "{html}"
        );
        assert!(html.contains("<ul>\n<li><strong>case</strong> limits</li>\n</ul>\n<details>"), "{html}");
        assert!(html.contains("<details><summary>1 &lt;of&gt; 1</summary>\n<ul>\n<li><span class=\"fail\">FAIL</span></li>\n</ul>\n</details>\n"), "{html}");
        assert!(html.ends_with("</table></div>\n</section>\n"), "{html}");
    }
}
