//! Markdown tables from columns and rows. The number of cells in a row is
//! the number of columns, checked by the compiler.
//!
//! ```
//! use gateway_benches::table::{Table, left, right};
//! let mut table = Table::new([left("host"), right("per request")]);
//! table.row(["native", "1.12 µs"]);
//! assert_eq!(table.to_markdown(), "| host | per request |\n|---|---:|\n| native | 1.12 µs |\n");
//! ```

/// How a column's cells are aligned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Text.
    Left,
    /// Figures.
    Right,
}

/// A column's header and alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    /// The header cell.
    pub header: &'static str,
    /// The alignment of the column's cells.
    pub align: Align,
}

/// A column of text.
pub const fn left(header: &'static str) -> Column {
    Column { header, align: Align::Left }
}

/// A column of figures.
pub const fn right(header: &'static str) -> Column {
    Column { header, align: Align::Right }
}

/// A table of `N` columns.
#[derive(Debug, Clone)]
pub struct Table<const N: usize> {
    columns: [Column; N],
    rows: Vec<[String; N]>,
}

impl<const N: usize> Table<N> {
    /// A table with these columns and no rows.
    pub fn new(columns: [Column; N]) -> Self {
        Table { columns, rows: Vec::new() }
    }

    /// Appends a row.
    pub fn row<S: Into<String>>(&mut self, cells: [S; N]) -> &mut Self {
        self.rows.push(cells.map(Into::into));
        self
    }

    /// The table as Markdown, one line per row, ending with a newline. A
    /// `|` or a line break inside a cell would break the table, so they are
    /// escaped and replaced by a space.
    pub fn to_markdown(&self) -> String {
        let line = |cells: &mut dyn Iterator<Item = String>| {
            let mut text = String::from("|");
            for cell in cells {
                text.push(' ');
                text.push_str(&cell);
                text.push_str(if cell.is_empty() { "|" } else { " |" });
            }
            text.push('\n');
            text
        };
        let clean = |cell: &str| cell.replace('\n', " ").replace('|', "\\|");
        let mut out = line(&mut self.columns.iter().map(|c| clean(c.header)));
        out.push('|');
        for column in &self.columns {
            out.push_str(match column.align {
                Align::Left => "---|",
                Align::Right => "---:|",
            });
        }
        out.push('\n');
        for row in &self.rows {
            out.push_str(&line(&mut row.iter().map(|c| clean(c))));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_separator_and_rows() {
        let mut table = Table::new([left(""), left("mode"), right("time")]);
        table.row(["a", "reuse", "1 ns"]).row(["b", "", "2 ns"]);
        assert_eq!(
            table.to_markdown(),
            "| | mode | time |\n|---|---|---:|\n| a | reuse | 1 ns |\n| b | | 2 ns |\n"
        );
    }

    #[test]
    fn cells_cannot_break_the_table() {
        let mut table = Table::new([left("x")]);
        table.row(["a|b\nc"]);
        assert_eq!(table.to_markdown(), "| x |\n|---|\n| a\\|b c |\n");
    }
}
