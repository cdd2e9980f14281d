//! The selection filter: which of the catalogue's metrics a `micro` run
//! measures, from the names, groups and prefixes given, and the one line
//! that names a term selecting nothing. Apart from the catalogue, which
//! is data.

use crate::error::Error;

use super::catalog::{catalog, Entry};

/// A validated set of metric names, in catalogue order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    names: Vec<String>,
}

impl Selection {
    /// Everything.
    pub fn all() -> Selection {
        Selection {
            names: catalog().into_iter().map(|e| e.name).collect(),
        }
    }

    /// Parse filter terms. A term selects metrics whose name equals it, whose
    /// group equals it (`proc`, `ctx`, `lat`, ...), whose name starts with
    /// `term.` (`ctx.2p_0k` has no dot suffix, `lat.pipe` also picks
    /// `lat.pipe.same_cpu`), or, for `prefix*`, whose name starts with
    /// `prefix`. An empty filter selects everything. A term that selects
    /// nothing is an error naming it and listing the valid groups.
    pub fn parse(filter: &[String]) -> Result<Selection, Error> {
        let cat = catalog();
        if filter.is_empty() {
            return Ok(Selection::all());
        }
        let mut keep = vec![false; cat.len()];
        for raw in filter {
            let mut any = false;
            for term in raw.split(',').map(str::trim).filter(|t| !t.is_empty()) {
                let mut hit = false;
                for (i, e) in cat.iter().enumerate() {
                    if matches(term, e) {
                        keep[i] = true;
                        hit = true;
                    }
                }
                if !hit {
                    return Err(Error::bad(unknown(term, &cat)));
                }
                any = true;
            }
            if !any {
                return Err(Error::bad(format!(
                    "empty micro benchmark filter term {raw:?}"
                )));
            }
        }
        Ok(Selection {
            names: cat
                .into_iter()
                .zip(keep)
                .filter(|(_, k)| *k)
                .map(|(e, _)| e.name)
                .collect(),
        })
    }

    /// Exactly one metric (no prefix matching), if it exists.
    pub fn only(name: &str) -> Option<Selection> {
        catalog().iter().any(|e| e.name == name).then(|| Selection {
            names: vec![name.to_string()],
        })
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }

    pub fn contains(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
    }

    /// The catalogue entries selected, in order.
    pub fn entries(&self) -> Vec<Entry> {
        catalog()
            .into_iter()
            .filter(|e| self.contains(&e.name))
            .collect()
    }
}

fn matches(term: &str, e: &Entry) -> bool {
    if let Some(prefix) = term.strip_suffix('*') {
        return e.name.starts_with(prefix);
    }
    e.name == term
        || e.group == term
        || e.name
            .strip_prefix(term)
            .is_some_and(|rest| rest.starts_with('.'))
}

fn unknown(term: &str, cat: &[Entry]) -> String {
    let mut groups: Vec<&str> = cat.iter().map(|e| e.group).collect();
    groups.dedup();
    let close: Vec<&str> = cat
        .iter()
        .filter(|e| {
            let stem = term.split('.').next_back().unwrap_or(term);
            !stem.is_empty() && e.name.contains(stem)
        })
        .map(|e| e.name.as_str())
        .take(6)
        .collect();
    let mut msg = format!(
        "unknown micro benchmark {term:?}; valid groups: {} (or a metric name such as proc.null_call, lat.pipe.same_cpu, ctx.2p_0k; `prefix*` also works; `sysdelta micro --list` lists all)",
        groups.join(", ")
    );
    if !close.is_empty() {
        msg.push_str(&format!("; did you mean: {}", close.join(", ")));
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_and_prefix_selection() {
        let s = Selection::parse(&["lat.pipe".into()]).unwrap();
        assert_eq!(
            s.names(),
            ["lat.pipe", "lat.pipe.same_cpu", "lat.pipe.cross_cpu"]
        );
        let s = Selection::parse(&["ctx".into()]).unwrap();
        assert_eq!(s.names().len(), 42);
        let s = Selection::parse(&["ctx.2p*".into()]).unwrap();
        assert_eq!(s.names().len(), 6);
    }

    #[test]
    fn unknown_name_is_named() {
        let e = Selection::parse(&["proc.nul_call".into()]).unwrap_err();
        assert!(e.to_string().contains("\"proc.nul_call\""), "{e}");
        assert!(e.to_string().contains("proc.null_call"), "{e}");
    }
}
