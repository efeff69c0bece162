//! A report's section as content, built once and written in each dialect: summary.md's
//! Markdown here ([`markdown`]), report.html's by `html::doc`. A section built as a
//! [`Section`] says the same in both files, and a new one is written once: its blocks
//! (paragraphs, lists, tables) from the summary, nothing about either format.
//!
//! The Markdown is GitHub's: a heading `## Title`, each block after a blank line, a list
//! item `- ` a line, tables through [`MdTable`] (cells escaped).

use std::fmt::Write;

mod gfm;
#[cfg(test)]
pub(crate) use gfm::tests as gfm_tests;
pub(crate) use gfm::{Align, MdTable};

/// A piece of running text: plain, strong (`**x**`, `<strong>`), code (`` `x` ``, `<code>`),
/// or whether something held (✅ or ❌; in the page, a coloured `pass` or `FAIL`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Span {
    Text(String),
    Strong(String),
    Code(String),
    /// Strong code (`` **`x`** ``, `<strong><code>`): a name a block is about.
    StrongCode(String),
    Mark(bool),
}

/// Running text: its spans in order.
pub(crate) type Line = Vec<Span>;

/// Plain text as a [`Line`].
pub(crate) fn plain(text: impl Into<String>) -> Line {
    vec![Span::Text(text.into())]
}

/// A table: its columns and their alignment, and its rows (a cell per column; a cell written
/// `` `x` `` is code in the page).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Table {
    pub columns: Vec<(&'static str, Align)>,
    pub rows: Vec<Vec<String>>,
}

/// One block of a section.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Block {
    /// A heading inside a section (`### x`, `<h3>`).
    Heading(String),
    Para(Line),
    /// A bulleted list, an item a line (an empty list writes nothing).
    List(Vec<Line>),
    Table(Table),
    /// Blocks a reader opens when they want them: folded under `summary` in the page
    /// (`<details>`, unfolded when `open`); Markdown has no fold, so summary.md writes the
    /// blocks as they are.
    Fold {
        summary: String,
        open: bool,
        blocks: Vec<Block>,
    },
}

/// A section: its anchor in the page, its heading and its blocks.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Section {
    pub id: &'static str,
    pub title: &'static str,
    pub blocks: Vec<Block>,
}

/// The section in Markdown: a blank line, its heading, then each block after a blank line.
pub(crate) fn markdown(o: &mut String, sec: &Section) {
    let _ = writeln!(o, "\n## {}", sec.title);
    blocks(o, &sec.blocks);
}

/// Blocks in Markdown, each after a blank line, with no heading of their own (a part of
/// a section another writer heads).
pub(crate) fn blocks(o: &mut String, blocks_: &[Block]) {
    for b in blocks_ {
        if !matches!(b, Block::Fold { .. }) {
            o.push('\n');
        }
        match b {
            Block::Heading(t) => {
                let _ = writeln!(o, "### {t}");
            }
            Block::Para(line) => {
                spans(o, line);
                o.push('\n');
            }
            Block::List(items) => {
                for item in items {
                    o.push_str("- ");
                    spans(o, item);
                    o.push('\n');
                }
            }
            Block::Table(t) => {
                let mut md = MdTable::new(o, &t.columns);
                for row in &t.rows {
                    md.row(row);
                }
            }
            Block::Fold { blocks: inner, .. } => blocks(o, inner),
        }
    }
}

fn spans(o: &mut String, line: &[Span]) {
    for s in line {
        match s {
            Span::Text(t) => o.push_str(t),
            Span::Strong(t) => {
                let _ = write!(o, "**{t}**");
            }
            Span::Code(t) => {
                let _ = write!(o, "`{t}`");
            }
            Span::StrongCode(t) => {
                let _ = write!(o, "**`{t}`**");
            }
            Span::Mark(held) => o.push(if *held { '✅' } else { '❌' }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_section_is_its_heading_then_each_block_after_a_blank_line() {
        let sec = Section {
            id: "s",
            title: "Title",
            blocks: vec![
                Block::Para(vec![Span::Text("with ".into()), Span::Code("code".into()), Span::Text(":".into())]),
                Block::Table(Table {
                    columns: vec![("a", Align::Left), ("n", Align::Right)],
                    rows: vec![vec!["x|y".into(), "1".into()]],
                }),
                Block::List(vec![vec![Span::Strong("case".into()), Span::Text(" limits".into())], plain("two")]),
                Block::List(vec![]),
                Block::Fold {
                    summary: "folded".into(),
                    open: false,
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
