//! HTML written by hand, and safely: markup comes only from the code itself (a
//! `&'static str`: [`Page::raw`], tag and class names), and every string that can come from
//! a summary — case names, descriptions, notices, figures — goes in through [`Page::text`],
//! a table [`Cell`] or an attribute, escaped.

use crate::report::chart::Inline;
use crate::report::doc::Align;

pub(super) use crate::base::escape::html as escape;

/// A table cell: its text and a class for it (`""`: none).
pub(super) struct Cell {
    pub text: String,
    pub class: &'static str,
}

impl Cell {
    pub(super) fn with(text: impl Into<String>, class: &'static str) -> Cell {
        Cell { text: text.into(), class }
    }
}

/// A page being written.
#[derive(Default)]
pub(super) struct Page {
    out: String,
}

impl Page {
    /// Markup written in the code itself: a `&'static str` cannot carry a summary's text.
    pub(super) fn raw(&mut self, markup: &'static str) -> &mut Page {
        self.out.push_str(markup);
        self
    }

    /// Text, escaped.
    pub(super) fn text(&mut self, s: &str) -> &mut Page {
        self.out.push_str(&escape(s));
        self
    }

    /// `<tag class="class">text</tag>` (`class` `""`: none).
    pub(crate) fn el(&mut self, tag: &'static str, class: &'static str, text: &str) -> &mut Page {
        self.open(tag, class).text(text).close(tag)
    }

    /// `<tag class="class">`.
    pub(super) fn open(&mut self, tag: &'static str, class: &'static str) -> &mut Page {
        self.raw("<").raw(tag);
        if !class.is_empty() {
            self.raw(" class=\"").raw(class).raw("\"");
        }
        self.raw(">")
    }

    /// `</tag>`.
    pub(super) fn close(&mut self, tag: &'static str) -> &mut Page {
        self.raw("</").raw(tag).raw(">")
    }

    /// A section with its heading: `<section id="id"><h2>title</h2>`; the caller closes it.
    /// The title is [`Page::inline`] text.
    pub(super) fn section(&mut self, id: &str, title: &str) -> &mut Page {
        self.raw("<section id=\"").text(id).raw("\">\n<h2>").inline(title).raw("</h2>\n")
    }

    /// `<a href="href">text</a>`.
    pub(super) fn link(&mut self, href: &str, text: &str) -> &mut Page {
        self.raw("<a href=\"").text(href).raw("\">").text(text).raw("</a>")
    }

    /// A chart as plotters drew it (its text escaped by plotters), in a figure with its
    /// caption and links to its files.
    pub(super) fn chart(&mut self, c: &Inline) -> &mut Page {
        self.raw("<figure id=\"chart-").text(&c.stem).raw("\">\n");
        // Plotters writes the `<svg>` element whole, and escapes every text and attribute.
        self.out.push_str(&c.svg);
        self.raw("<figcaption>").text(&c.title).raw(" (");
        self.link(&format!("charts/{}.png", c.stem), "PNG").raw(", ");
        self.link(&format!("charts/{}.svg", c.stem), "SVG").raw(")</figcaption>\n</figure>\n")
    }

    /// A table: its header from `columns` (right-aligned ones get class `num`), a row per
    /// entry of `rows`. A cell written `` `x` `` is code.
    pub(super) fn table(&mut self, columns: &[(&str, Align)], rows: &[Vec<Cell>]) -> &mut Page {
        let num = |a: &Align| matches!(a, Align::Right);
        self.raw("<div class=\"wide\"><table>\n<thead><tr>");
        for (name, a) in columns {
            self.open("th", if num(a) { "num" } else { "" }).text(name).close("th");
        }
        self.raw("</tr></thead>\n<tbody>\n");
        for row in rows {
            self.raw("<tr>");
            for (k, cell) in row.iter().enumerate() {
                let class = match (cell.class, columns.get(k).is_some_and(|c| num(&c.1))) {
                    ("", true) => "num",
                    (c, _) => c,
                };
                self.open("td", class);
                if cell.text.trim().is_empty() {
                    self.text("-");
                } else {
                    self.inline(&cell.text);
                }
                self.close("td");
            }
            self.raw("</tr>\n");
        }
        self.raw("</tbody>\n</table></div>\n")
    }

    /// Text written as Markdown's inline syntax, escaped: `` `x` `` is code, `**x**` strong,
    /// `*x*` emphasis, and the marks ✅ and ❌ a coloured ✓ and ✗ (a font without emoji still
    /// has them); a marker with no partner stays text.
    pub(super) fn inline(&mut self, text: &str) -> &mut Page {
        let mut rest = text;
        while let Some((at, c)) = rest.char_indices().find(|(_, c)| matches!(c, '`' | '*' | '✅' | '❌')) {
            self.text(&rest[..at]);
            let after = &rest[at + c.len_utf8()..];
            let mark = match c {
                '✅' | '❌' => {
                    let (class, glyph) = if c == '✅' { ("pass", "✓") } else { ("fail", "✗") };
                    self.el("span", class, glyph);
                    rest = after;
                    continue;
                }
                '*' if after.starts_with('*') => "**",
                '*' => "*",
                _ => "`",
            };
            let body = &rest[at + mark.len()..];
            let end = body.find(mark).filter(|&e| e > 0 && (mark == "`" || body[..e].trim() == &body[..e]));
            let Some(end) = end else {
                self.text(mark);
                rest = body;
                continue;
            };
            match mark {
                "`" => self.el("code", "", &body[..end]),
                "**" => self.raw("<strong>").inline(&body[..end]).raw("</strong>"),
                _ => self.raw("<em>").inline(&body[..end]).raw("</em>"),
            };
            rest = &body[end + mark.len()..];
        }
        self.text(rest)
    }

    pub(super) fn finish(self) -> String {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;

    #[test]
    fn text_cells_and_links_are_escaped_and_code_cells_are_code() {
        assert_eq!(escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
        assert!(matches!(escape("plain"), Cow::Borrowed(_)));
        let mut p = Page::default();
        p.el("p", "note", "<script>alert(1)</script>").link("x\" onclick=\"y", "<b>");
        p.table(
            &[("case", Align::Left), ("n", Align::Right)],
            &[vec![Cell::with("<i>", ""), Cell::with("`a<b`", "fail")]],
        );
        let html = p.finish();
        assert!(html.contains("<p class=\"note\">&lt;script&gt;alert(1)&lt;/script&gt;</p>"), "{html}");
        assert!(html.contains("<a href=\"x&quot; onclick=&quot;y\">&lt;b&gt;</a>"), "{html}");
        assert!(html.contains("<td>&lt;i&gt;</td><td class=\"fail\"><code>a&lt;b</code></td>"), "{html}");
        assert!(html.contains("<th class=\"num\">n</th>"), "{html}");
    }

    #[test]
    fn inline_markdown_becomes_markup_and_a_lone_marker_stays_text() {
        let mut p = Page::default();
        p.inline("a `x<y` **b** *c* ✅ 2 * 3 `lone ❌");
        assert_eq!(
            p.finish(),
            "a <code>x&lt;y</code> <strong>b</strong> <em>c</em> <span class=\"pass\">✓</span> 2 * 3 `lone \
             <span class=\"fail\">✗</span>"
        );
    }
}
