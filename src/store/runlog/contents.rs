//! A run log's bytes read back: its records, and the damaged line that
//! ends them if there is one. Never fails on what the bytes are: a log a
//! crash cut short, or one someone scribbled on, is read as far as it is
//! sound.

use std::path::Path;

use anyhow::{anyhow, Result};

use super::RunRow;

/// One run record of a log file and where its line is.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// 1-based line number.
    pub line: usize,
    /// Byte offset of the line's start.
    pub offset: usize,
    pub row: RunRow,
}

/// The first complete line of a log file that is not a run record.
#[derive(Clone, Debug, PartialEq)]
pub struct Damage {
    pub line: usize,
    /// 1-based column where parsing it failed.
    pub column: usize,
    pub offset: usize,
    /// What is wrong there (the JSON parser's message, without position).
    pub error: String,
}

/// What a log file holds. The rows end at the first NUL byte (the file is
/// zero beyond them) or at the end of the file; a last line without its
/// newline was cut short by a crash while it was written (the run in
/// flight) and is not a record. A complete line that is not a record is
/// damage: the records before it are kept, nothing from it on is read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Contents {
    /// The records before the first damaged line, in file order.
    pub records: Vec<Record>,
    pub damage: Option<Damage>,
    /// Bytes of the complete lines (a torn last line starts here).
    pub used: usize,
    /// Bytes before the first NUL: the complete lines and a torn one.
    pub end: usize,
    /// Lines in `..end`, a torn last line included.
    pub lines: usize,
}

impl Contents {
    /// The contents of the log at `path`; a missing log holds nothing.
    pub fn read(path: &Path) -> Result<(Contents, Vec<u8>)> {
        // Only a log that is ours is read (never through a link).
        match crate::sys::trust::read(path) {
            Ok(Some(b)) => Ok((Contents::parse(&b), b)),
            Ok(None) => Ok((Contents::default(), Vec::new())),
            Err(e) => Err(anyhow!("cannot read the run log: {e}")),
        }
    }

    /// The contents of a log file's bytes; never fails, whatever they are.
    pub fn parse(bytes: &[u8]) -> Contents {
        let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
        let content = &bytes[..end];
        let used = content
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |i| i + 1);
        let newlines = content[..used].iter().filter(|b| **b == b'\n').count();
        let mut contents = Contents {
            records: Vec::new(),
            damage: None,
            used,
            end,
            lines: newlines + usize::from(used < end),
        };
        let mut offset = 0;
        for (i, line) in content[..used].split(|b| *b == b'\n').enumerate() {
            let start = offset;
            offset += line.len() + 1;
            if line.is_empty() {
                continue;
            }
            match serde_json::from_slice(line) {
                Ok(row) => contents.records.push(Record {
                    line: i + 1,
                    offset: start,
                    row,
                }),
                Err(e) => {
                    let message = e.to_string();
                    let position = format!(" at line {} column {}", e.line(), e.column());
                    contents.damage = Some(Damage {
                        line: i + 1,
                        column: e.column(),
                        offset: start,
                        error: message
                            .strip_suffix(&position)
                            .unwrap_or(&message)
                            .to_string(),
                    });
                    break;
                }
            }
        }
        contents
    }

    /// The rows, or an error naming the damaged line if there is one.
    pub fn rows(self, path: &Path) -> Result<Vec<RunRow>> {
        if let Some(d) = &self.damage {
            return Err(anyhow!(
                "{}:{}:{}: not a run record ({}); the log is left as it is",
                path.display(),
                d.line,
                d.column,
                d.error
            ));
        }
        Ok(self.records.into_iter().map(|r| r.row).collect())
    }
}
