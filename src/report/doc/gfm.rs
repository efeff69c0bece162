//! GitHub-flavoured markdown tables for `summary.md`: a table's header and its alignments
//! come from one list, so its delimiter row always has as many columns as its header, and
//! every cell is escaped, so a `|` inside a value cannot add a column.

use std::fmt::Write;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Align {
    Left,
    Right,
}

/// A table being written into a report: the header and delimiter rows on creation, then
/// one [`MdTable::row`] per line.
pub(crate) struct MdTable<'a> {
    out: &'a mut String,
    columns: usize,
}

impl<'a> MdTable<'a> {
    pub(crate) fn new(out: &'a mut String, columns: &[(&str, Align)]) -> MdTable<'a> {
        let names: Vec<String> = columns.iter().map(|(name, _)| cell(name)).collect();
        let rules: Vec<&str> = columns
            .iter()
            .map(|(_, a)| match a {
                Align::Left => "---",
                Align::Right => "---:",
            })
            .collect();
        let _ = writeln!(out, "| {} |", names.join(" | "));
        let _ = writeln!(out, "|{}|", rules.join("|"));
        MdTable { out, columns: columns.len() }
    }

    /// One row; it must have a cell per column.
    pub(crate) fn row<S: AsRef<str>>(&mut self, cells: &[S]) {
        debug_assert_eq!(
            cells.len(),
            self.columns,
            "a row of {} cells in a table of {} columns",
            cells.len(),
            self.columns
        );
        let cells: Vec<String> = cells.iter().map(|c| cell(c.as_ref())).collect();
        let _ = writeln!(self.out, "| {} |", cells.join(" | "));
    }
}

/// A value made safe for a table cell: HTML escaped outside code spans
/// ([`super::escape_inline`]), pipes escaped (GFM reads `\|` as `|`, in code spans too), line
/// breaks flattened, and an empty value shown as `-`.
fn cell(text: &str) -> String {
    let t = text.trim();
    if t.is_empty() {
        return "-".into();
    }
    super::escape_inline(&t.replace(['\n', '\r'], " ")).replace('|', "\\|")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

    /// Cells of a table line as GFM splits them: on every `|` not escaped.
    fn source_cells(line: &str) -> usize {
        let t = line.trim();
        let t = t.strip_prefix('|').unwrap_or(t);
        let t = if t.ends_with('|') && !t.ends_with("\\|") { &t[..t.len() - 1] } else { t };
        let mut n = 1;
        let mut escaped = false;
        for c in t.chars() {
            if c == '|' && !escaped {
                n += 1;
            }
            escaped = c == '\\' && !escaped;
        }
        n
    }

    /// Checks that every table of `md` parses as a GFM table whose rows all have its
    /// header's column count, as parsed and as written; returns how many tables there are.
    pub(crate) fn check_tables(md: &str) -> Result<usize, String> {
        let delimiters = md.lines().filter(|l| l.starts_with("|-") || l.starts_with("|:")).count();
        let mut tables = Vec::new(); // (columns, [(row, cells as written, cells as parsed)])
        let mut cells = 0;
        for (ev, range) in Parser::new_ext(md, Options::ENABLE_TABLES).into_offset_iter() {
            match ev {
                Event::Start(Tag::Table(aligns)) => tables.push((aligns.len(), Vec::new())),
                Event::Start(Tag::TableHead | Tag::TableRow) => {
                    cells = 0;
                    let row = &md[range];
                    tables.last_mut().unwrap().1.push((row.to_owned(), source_cells(row), 0));
                }
                Event::Start(Tag::TableCell) => cells += 1,
                Event::End(TagEnd::TableHead | TagEnd::TableRow) => {
                    tables.last_mut().unwrap().1.last_mut().unwrap().2 = cells;
                }
                _ => {}
            }
        }
        if tables.len() != delimiters {
            return Err(format!("{delimiters} delimiter rows but {} tables parsed", tables.len()));
        }
        for (columns, rows) in &tables {
            for (row, written, parsed) in rows {
                if (*written, *parsed) != (*columns, *columns) {
                    return Err(format!(
                        "row {row:?} has {written} cells ({parsed} parsed) in a {columns}-column table"
                    ));
                }
            }
        }
        Ok(tables.len())
    }

    #[test]
    fn the_table_check_finds_a_broken_table() {
        // The old "Calls and requests" bug: more header cells than delimiter cells.
        let header_wider = check_tables("| a | b | c |\n|---|---|\n| 1 | 2 | 3 |\n");
        assert_eq!(header_wider.unwrap_err(), "1 delimiter rows but 0 tables parsed");
        assert!(check_tables("| a | b |\n|---|---|\n| 1 | 2 | 3 |\n").is_err(), "a row with a cell too many");
        assert_eq!(check_tables("| a | b\\|c |\n|---|---:|\n| 1 | - |\n"), Ok(1));
    }

    #[test]
    fn the_delimiter_row_follows_the_header_and_pipes_are_escaped() {
        let mut o = String::new();
        let mut t = MdTable::new(&mut o, &[("case", Align::Left), ("calls", Align::Right)]);
        t.row(&["a|b", ""]);
        assert_eq!(o, "| case | calls |\n|---|---:|\n| a\\|b | - |\n");
    }
}
