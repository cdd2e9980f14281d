//! The parameter values each item of `ab`'s scans (`-P`/`-L`) was made
//! with, kept in the plan `ab` generates and stores, as one comment line
//! at its top: the plan loads as before (a comment is nothing to it), and
//! exports that need the values (hyperfine's `"parameters"`, which its
//! `plot_parametrized.py` groups by) read them back from the stored text.
//! A store is anyone's who can write it: what is read is only ever
//! printed as data (JSON strings), never run.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::scan::Point;

/// The comment line's start.
const MARK: &str = "# sysdelta scan parameters: ";

/// Parameter name -> value, of one item.
pub type Values = BTreeMap<String, String>;

/// The scanned items of a plan: configs and workloads by name, each with
/// its parameters' values; items no scan made are absent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ScanParameters {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub configs: BTreeMap<String, Values>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub workloads: BTreeMap<String, Values>,
}

impl ScanParameters {
    /// Record `point` as item `name`'s (of `configs` or `workloads`); an
    /// empty point (no scan) records nothing.
    pub fn add(to: &mut BTreeMap<String, Values>, name: &str, point: &Point) {
        if !point.is_empty() {
            to.insert(name.to_string(), point.iter().cloned().collect());
        }
    }

    /// `plan_text` with these parameters as its first line (unchanged
    /// when there are none).
    pub fn prepend_to(&self, plan_text: String) -> String {
        if self.configs.is_empty() && self.workloads.is_empty() {
            return plan_text;
        }
        // serde_json writes no newline inside a string: one line.
        match serde_json::to_string(self) {
            Ok(json) => format!("{MARK}{json}\n{plan_text}"),
            Err(_) => plan_text,
        }
    }

    /// The parameters a stored plan's first line records; none when it
    /// has no such line (a plan file, an older sysdelta's `ab`) or the line
    /// does not parse.
    pub fn of(plan_text: &str) -> ScanParameters {
        plan_text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix(MARK))
            .and_then(|json| serde_json::from_str(json).ok())
            .unwrap_or_default()
    }

    /// The parameters of the result of `config` running `workload`: the
    /// config's and the workload's (a scan varies one or the other).
    pub fn of_cell(&self, config: &str, workload: &str) -> Values {
        let mut out = self.workloads.get(workload).cloned().unwrap_or_default();
        if let Some(c) = self.configs.get(config) {
            out.extend(c.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_is_a_comment_and_reads_back() {
        let mut p = ScanParameters::default();
        let point = vec![("t".to_string(), "0.01".to_string())];
        ScanParameters::add(&mut p.configs, "sleep_0.01", &point);
        ScanParameters::add(&mut p.workloads, "w", &Vec::new());
        let text = p.prepend_to("name = \"ab\"\n".into());
        assert!(text.starts_with("# "), "{text}");
        let t: toml::Table = text.parse().unwrap();
        assert_eq!(t["name"].as_str(), Some("ab"));
        assert_eq!(ScanParameters::of(&text), p);
        assert_eq!(
            ScanParameters::of(&text).of_cell("sleep_0.01", "w")["t"],
            "0.01"
        );
        assert_eq!(
            ScanParameters::of("name = \"x\"\n"),
            ScanParameters::default()
        );
        let none = ScanParameters::default().prepend_to("x".into());
        assert_eq!(none, "x");
    }
}
