//! The markdown body, read with `pulldown-cmark` (CommonMark plus GFM tables).
//!
//! Code blocks (fenced and indented), blockquotes and HTML blocks are *masked*: quoted or
//! example text, which no body rule reads and whose tables never run. What is left is kept two
//! ways: per source line (what a line-based reader like Handover 0.4.1 sees, for its rubric)
//! and as blocks (headings, list items, paragraphs, tables with their cells and code spans), for
//! the baton rubric and for claims. GFM cell rules apply, so `\|` inside a code span in a table
//! cell is a pipe, not a cell boundary.

use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// The body of a document.
#[derive(Debug, Clone, Default)]
pub struct Body {
    /// The file line of the body's first line.
    pub first_line: usize,
    /// Every body line, in order.
    pub lines: Vec<Line>,
    /// Headings, list items, paragraphs and code blocks outside masked regions, in order.
    pub blocks: Vec<Block>,
    /// Tables outside masked regions.
    pub tables: Vec<Table>,
}

/// One source line of the body.
#[derive(Debug, Clone, Default)]
pub struct Line {
    /// The file line number.
    pub number: usize,
    /// The line as written, or empty when it is masked.
    pub raw: String,
    /// Whether the line is inside a code block, blockquote or HTML block.
    pub masked: bool,
    /// The line's prose: its text outside code spans, links' targets and markup.
    pub prose: String,
    /// Whether the line carries a link or a URL.
    pub linked: bool,
}

/// What a block is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    /// A heading of this level (1–6).
    Heading(u8),
    /// A list item.
    Item {
        /// Whether its list is numbered.
        ordered: bool,
        /// Whether it is its list's first item.
        first: bool,
    },
    /// A paragraph outside any list item.
    Paragraph,
    /// A fenced or indented code block (its lines are masked, its text kept for the
    /// verification section).
    Code,
}

/// A heading, list item, paragraph or code block.
#[derive(Debug, Clone)]
pub struct Block {
    /// What it is.
    pub kind: BlockKind,
    /// The file line it starts on.
    pub line: usize,
    /// Its text, code spans included.
    pub text: String,
    /// Its text without code spans.
    pub prose: String,
    /// Its code spans (for a code block: its content).
    pub code: Vec<String>,
    /// Whether it opens with strong emphasis (`**Do this first.**`).
    pub strong_lead: bool,
}

impl Block {
    /// Whether it is a heading or list item: a structural line a cue must sit on.
    pub fn is_structural(&self) -> bool {
        matches!(self.kind, BlockKind::Heading(_) | BlockKind::Item { .. })
    }
}

/// A GFM table.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// The file line of its header row.
    pub line: usize,
    /// The header row.
    pub header: Vec<Cell>,
    /// The body rows.
    pub rows: Vec<Row>,
}

/// A table body row.
#[derive(Debug, Clone, Default)]
pub struct Row {
    /// Its file line.
    pub line: usize,
    /// Its cells, padded to the header's width.
    pub cells: Vec<Cell>,
    /// The row as written.
    pub raw: String,
    /// Text past the header's last column, which GFM drops (usually an unescaped `|`).
    pub dropped: String,
}

/// A table cell.
#[derive(Debug, Clone, Default)]
pub struct Cell {
    /// Its text, code spans included.
    pub text: String,
    /// Its code spans, with GFM's `\|` already read as `|`.
    pub code: Vec<String>,
}

impl Body {
    /// Parse `text`, whose first line is file line `first_line`.
    pub fn parse(text: &str, first_line: usize) -> Body {
        let starts: Vec<usize> = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        let mut lines: Vec<Line> = text
            .split('\n')
            .enumerate()
            .map(|(i, l)| Line {
                number: first_line + i,
                raw: l.strip_suffix('\r').unwrap_or(l).to_string(),
                ..Line::default()
            })
            .collect();
        let line_index = |offset: usize| starts.partition_point(|&s| s <= offset) - 1;
        let mut builder = Builder {
            body: Body {
                first_line,
                ..Body::default()
            },
            masked: Vec::new(),
            open: Vec::new(),
            lists: Vec::new(),
            quote_depth: 0,
            html_depth: 0,
            code: None,
            table: None,
        };
        for (event, range) in Parser::new_ext(text, Options::ENABLE_TABLES).into_offset_iter() {
            let line = first_line + line_index(range.start);
            builder.event(event, range, line, text, &mut lines, &line_index);
        }
        for range in builder.masked.drain(..) {
            let end = range.end.max(range.start + 1) - 1;
            for l in &mut lines[line_index(range.start)..=line_index(end.min(text.len()))] {
                l.masked = true;
                l.raw.clear();
                l.prose.clear();
            }
        }
        let mut body = builder.body;
        body.lines = lines;
        body
    }

    /// The blocks of the section a heading opens: up to the next heading of the same or a
    /// higher level.
    pub fn section(&self, heading: usize) -> &[Block] {
        let BlockKind::Heading(level) = self.blocks[heading].kind else {
            return &[];
        };
        let rest = &self.blocks[heading + 1..];
        let end = rest
            .iter()
            .position(|b| matches!(b.kind, BlockKind::Heading(l) if l <= level))
            .unwrap_or(rest.len());
        &rest[..end]
    }
}

struct Builder {
    body: Body,
    masked: Vec<Range<usize>>,
    /// Open text blocks; `None` for a paragraph inside a list item.
    open: Vec<Option<usize>>,
    /// Open lists: numbered, items so far.
    lists: Vec<(bool, usize)>,
    quote_depth: usize,
    html_depth: usize,
    code: Option<usize>,
    table: Option<TableState>,
}

struct TableState {
    table: Table,
    in_head: bool,
    cell: Option<Cell>,
    row_range: Range<usize>,
    last_cell_end: usize,
}

impl Builder {
    #[allow(clippy::too_many_arguments)]
    fn event(
        &mut self,
        event: Event<'_>,
        range: Range<usize>,
        line: usize,
        text: &str,
        lines: &mut [Line],
        line_index: &dyn Fn(usize) -> usize,
    ) {
        if self.quote_depth > 0 {
            match event {
                Event::Start(Tag::BlockQuote(_)) => self.quote_depth += 1,
                Event::End(TagEnd::BlockQuote(_)) => self.quote_depth -= 1,
                _ => {}
            }
            return;
        }
        match event {
            Event::Start(Tag::BlockQuote(_)) => {
                self.quote_depth = 1;
                self.masked.push(range);
            }
            Event::Start(Tag::HtmlBlock) => {
                self.html_depth += 1;
                self.masked.push(range);
            }
            Event::End(TagEnd::HtmlBlock) => self.html_depth = self.html_depth.saturating_sub(1),
            _ if self.html_depth > 0 => {}
            Event::Start(Tag::CodeBlock(_)) => {
                self.masked.push(range);
                self.code = Some(self.push(BlockKind::Code, line));
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some(i) = self.code.take() {
                    let block = &mut self.body.blocks[i];
                    block.code.push(std::mem::take(&mut block.text));
                }
            }
            Event::Start(Tag::Heading { level, .. }) => {
                let i = self.push(BlockKind::Heading(level as u8), line);
                self.open.push(Some(i));
            }
            Event::Start(Tag::List(start)) => self.lists.push((start.is_some(), 0)),
            Event::End(TagEnd::List(_)) => {
                self.lists.pop();
            }
            Event::Start(Tag::Item) => {
                let (ordered, first) = match self.lists.last_mut() {
                    Some((ordered, count)) => {
                        *count += 1;
                        (*ordered, *count == 1)
                    }
                    None => (false, true),
                };
                let i = self.push(BlockKind::Item { ordered, first }, line);
                self.open.push(Some(i));
            }
            Event::Start(Tag::Paragraph) => {
                let in_item = self
                    .current()
                    .is_some_and(|i| matches!(self.body.blocks[i].kind, BlockKind::Item { .. }));
                if in_item || self.table.is_some() {
                    self.open.push(None);
                } else {
                    let i = self.push(BlockKind::Paragraph, line);
                    self.open.push(Some(i));
                }
            }
            Event::End(TagEnd::Paragraph | TagEnd::Heading(_) | TagEnd::Item) => {
                self.open.pop();
            }
            Event::Start(Tag::Table(_)) => {
                self.table = Some(TableState {
                    table: Table {
                        line,
                        ..Table::default()
                    },
                    in_head: false,
                    cell: None,
                    row_range: 0..0,
                    last_cell_end: 0,
                });
            }
            Event::Start(Tag::TableHead) => {
                if let Some(t) = &mut self.table {
                    t.in_head = true;
                }
            }
            Event::End(TagEnd::TableHead) => {
                if let Some(t) = &mut self.table {
                    t.in_head = false;
                }
            }
            Event::Start(Tag::TableRow) => {
                if let Some(t) = &mut self.table {
                    t.row_range = range.clone();
                    t.table.rows.push(Row {
                        line,
                        raw: text[range].trim_end().to_string(),
                        ..Row::default()
                    });
                }
            }
            Event::End(TagEnd::TableRow) => {
                if let Some(t) = &mut self.table {
                    let width = t.table.header.len();
                    let rest = text[t.last_cell_end.min(t.row_range.end)..t.row_range.end].trim();
                    let rest = rest.strip_prefix('|').unwrap_or(rest);
                    let rest = rest.strip_suffix('|').unwrap_or(rest).trim();
                    if let Some(row) = t.table.rows.last_mut() {
                        row.dropped = rest.to_string();
                        row.cells
                            .resize(width.max(row.cells.len()), Cell::default());
                    }
                }
            }
            Event::Start(Tag::TableCell) => {
                if let Some(t) = &mut self.table {
                    t.cell = Some(Cell::default());
                }
            }
            Event::End(TagEnd::TableCell) => {
                if let Some(t) = &mut self.table
                    && let Some(mut cell) = t.cell.take()
                {
                    cell.text = cell.text.trim().to_string();
                    t.last_cell_end = range.end;
                    if t.in_head {
                        t.table.header.push(cell);
                    } else if let Some(row) = t.table.rows.last_mut() {
                        row.cells.push(cell);
                    }
                }
            }
            Event::End(TagEnd::Table) => {
                if let Some(t) = self.table.take() {
                    self.body.tables.push(t.table);
                }
            }
            Event::Start(Tag::Strong) => {
                if self.table.is_none()
                    && let Some(i) = self.current()
                {
                    let block = &mut self.body.blocks[i];
                    if block.text.trim().is_empty() {
                        block.strong_lead = true;
                    }
                }
            }
            Event::Start(Tag::Link { .. }) => {
                lines[line_index(range.start)].linked = true;
            }
            Event::Text(t) => {
                if let Some(i) = self.code {
                    self.body.blocks[i].text.push_str(&t);
                    return;
                }
                if t.contains("http://") || t.contains("https://") {
                    lines[line_index(range.start)].linked = true;
                }
                for (k, part) in t.split('\n').enumerate() {
                    let l = &mut lines[(line_index(range.start) + k).min(lines.len() - 1)];
                    l.prose.push_str(part);
                    l.prose.push(' ');
                }
                self.append(&t, false);
            }
            Event::Code(c) => self.append(&c, true),
            Event::SoftBreak | Event::HardBreak => self.append(" ", false),
            _ => {}
        }
    }

    fn push(&mut self, kind: BlockKind, line: usize) -> usize {
        self.body.blocks.push(Block {
            kind,
            line,
            text: String::new(),
            prose: String::new(),
            code: Vec::new(),
            strong_lead: false,
        });
        self.body.blocks.len() - 1
    }

    fn current(&self) -> Option<usize> {
        self.open.iter().rev().find_map(|o| *o)
    }

    fn append(&mut self, s: &str, code: bool) {
        if let Some(t) = &mut self.table
            && let Some(cell) = &mut t.cell
        {
            cell.text.push_str(s);
            if code {
                cell.code.push(s.to_string());
            }
            return;
        }
        if let Some(i) = self.current() {
            let block = &mut self.body.blocks[i];
            block.text.push_str(s);
            if code {
                block.code.push(s.to_string());
            } else {
                block.prose.push_str(s);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_pipes_in_code_spans_stay_in_the_cell() {
        let body = Body::parse(
            "| Claim | Verify |\n|---|---|\n| migration | `ls migrations/ \\| grep guest_orders` |\n| split | `ls migrations/ | grep guest_orders` |\n",
            10,
        );
        let t = &body.tables[0];
        assert_eq!(t.line, 10);
        assert_eq!(
            t.rows[0].cells[1].code,
            ["ls migrations/ | grep guest_orders"]
        );
        assert_eq!(t.rows[0].line, 12);
        assert!(t.rows[0].dropped.is_empty());
        assert!(t.rows[1].cells[1].code.is_empty());
        assert_eq!(t.rows[1].dropped, "grep guest_orders`");
    }

    #[test]
    fn code_blocks_and_quotes_are_masked() {
        let text = "intro\n\n````\n```\n| a | Verify |\n|---|---|\n| x | `rm -rf /` |\n```\n````\n\n> quoted\nlazy\n\n- **First** step\n  more\n";
        let body = Body::parse(text, 1);
        assert!(body.tables.is_empty());
        let masked: Vec<usize> = body
            .lines
            .iter()
            .filter(|l| l.masked)
            .map(|l| l.number)
            .collect();
        assert_eq!(masked, [3, 4, 5, 6, 7, 8, 9, 11, 12]);
        let item = body.blocks.last().unwrap();
        assert_eq!(item.text, "First step more");
        assert!(item.strong_lead);
        assert_eq!(item.line, 14);
    }

    #[test]
    fn sections_end_at_the_next_heading_of_the_same_level() {
        let body = Body::parse("## A\n\n### a1\n\ntext\n\n## B\n\nother\n", 1);
        assert_eq!(body.section(0).len(), 2);
        assert_eq!(body.section(1).len(), 1);
    }
}
