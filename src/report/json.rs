//! JSON: every raw sample of every run and every statistic, and for
//! kernel configs every boot.

use crate::analysis::view::{Raw, ReportView};
use crate::analysis::Analysis;

/// The JSON format: the stored units throughout, so the raw samples and
/// the statistics agree.
pub struct Json;

impl super::format::ReportFormat for Json {
    fn report(&self, v: &ReportView, _: &super::ReportOptions) -> anyhow::Result<String> {
        render(&v.raw, &v.stored)
    }
}

/// `a` with the raw records it was computed from.
///
/// Written piece by piece, one run (or metric, or boot) at a time, in the
/// bytes serde_json's pretty printer gives the whole document as one
/// `Value` (members in name order, two spaces an indent): a tree of every
/// run held at once took about 6 KB a run, ten times the text it becomes.
pub fn render(data: &Raw, a: &Analysis) -> anyhow::Result<String> {
    let mut bytes = Vec::new();
    write(data, a, &mut bytes)?;
    Ok(String::from_utf8(bytes)?)
}

/// [`render`] into `sink`, 64 KiB at a time: `report --format json` on
/// stdout never holds the whole document either.
pub fn write(data: &Raw, a: &Analysis, sink: &mut dyn std::io::Write) -> anyhow::Result<()> {
    use serde_json::{to_value, Value};
    let mut out = Out {
        buf: String::from("{\n"),
        sink,
    };
    // The analysis without its metrics (their tree is built one at a time).
    let head = Analysis {
        metrics: Vec::new(),
        ..a.clone()
    };
    let Value::Object(head) = to_value(&head)? else {
        anyhow::bail!("the analysis is not a JSON object");
    };
    out.push_str("  \"analysis\": {");
    for (i, (key, value)) in head.iter().enumerate() {
        out.push_str(if i == 0 { "\n    " } else { ",\n    " });
        member_name(&mut out, key)?;
        match key.as_str() {
            "metrics" => array(&mut out, a.metrics.iter().map(to_value), "    ")?,
            _ => pretty(&mut out, value, "    ")?,
        }
    }
    out.push_str(if head.is_empty() { "}" } else { "\n  }" });
    // Kernel configs: every boot as stored, console tails whole; null for
    // host experiments, as their reports have always said.
    out.push_str(",\n  \"boots\": ");
    match data.boots.is_empty() {
        true => out.push_str("null"),
        false => array(&mut out, data.boots.iter().map(timed), "  ")?,
    }
    out.push_str(",\n  \"events\": ");
    pretty(&mut out, &to_value(&data.events)?, "  ")?;
    out.push_str(",\n  \"experiment\": ");
    pretty(&mut out, &to_value(&data.info)?, "  ")?;
    out.push_str(",\n  \"format\": \"sysdelta-report-1\",\n  \"metrics\": ");
    pretty(&mut out, &to_value(&data.metrics)?, "  ")?;
    out.push_str(",\n  \"runs\": ");
    array(&mut out, data.runs.iter().map(timed), "  ")?;
    out.push_str("\n}\n");
    out.sink.write_all(out.buf.as_bytes())?;
    Ok(())
}

/// The document as it is written: a buffer handed to the sink once it
/// holds 64 KiB.
struct Out<'w> {
    buf: String,
    sink: &'w mut dyn std::io::Write,
}

impl Out<'_> {
    fn push_str(&mut self, s: &str) {
        self.buf.push_str(s);
    }

    fn push(&mut self, c: char) {
        self.buf.push(c);
    }

    /// Hand what is written so far to the sink, if it is worth a write.
    fn flush_some(&mut self) -> std::io::Result<()> {
        if self.buf.len() >= 1 << 16 {
            self.sink.write_all(self.buf.as_bytes())?;
            self.buf.clear();
        }
        Ok(())
    }
}

/// One run or boot as a JSON value, its start in the one time format of
/// the whole file: the store keeps run and boot starts as Unix seconds,
/// experiments and events as RFC 3339.
fn timed(item: &impl serde::Serialize) -> serde_json::Result<serde_json::Value> {
    let mut v = serde_json::to_value(item)?;
    let t = v["started_at"].as_f64();
    v["started_at"] = rfc3339(t).into();
    Ok(v)
}

/// `"name": ` as serde_json writes a member's name.
fn member_name(out: &mut Out, name: &str) -> anyhow::Result<()> {
    out.push_str(&serde_json::to_string(name)?);
    out.push_str(": ");
    Ok(())
}

/// `v` pretty-printed where its first line continues the current one and
/// the others are indented by `indent` more. serde_json escapes line
/// breaks inside strings, so every line break is the layout's. serde_json
/// escapes C0 controls; json_text the DEL and C1 controls it leaves raw,
/// so `cat report.json` is terminal-safe too.
fn pretty(out: &mut Out, v: &serde_json::Value, indent: &str) -> anyhow::Result<()> {
    let text = super::escape::json_text(serde_json::to_string_pretty(v)?);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
            out.push_str(indent);
        }
        out.push_str(line);
    }
    Ok(())
}

/// A JSON array of `items`, each built only when it is written, laid out
/// as [`pretty`] lays out the whole array.
fn array(
    out: &mut Out,
    items: impl Iterator<Item = serde_json::Result<serde_json::Value>>,
    indent: &str,
) -> anyhow::Result<()> {
    let inner = format!("{indent}  ");
    let mut empty = true;
    for item in items {
        out.push_str(if empty { "[\n" } else { ",\n" });
        out.push_str(&inner);
        pretty(out, &item?, &inner)?;
        out.flush_some()?;
        empty = false;
    }
    out.push_str(if empty { "[]" } else { "\n" });
    if !empty {
        out.push_str(indent);
        out.push(']');
    }
    Ok(())
}

/// Unix seconds as RFC 3339 UTC with milliseconds; None (null) for an
/// unknown time (0: imported runs have none).
fn rfc3339(t: Option<f64>) -> Option<String> {
    let t = t.filter(|t| t.is_finite() && *t > 0.0)?;
    let ms = (t * 1000.0).round() as i64;
    let (secs, ms) = (ms.div_euclid(1000), ms.rem_euclid(1000));
    let (y, m, d, hh, mm, ss) = crate::sys::utc::civil(secs);
    Some(format!(
        "{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}.{ms:03}Z"
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn rfc3339_of_unix_seconds() {
        assert_eq!(
            super::rfc3339(Some(1_700_000_000.25)).as_deref(),
            Some("2023-11-14T22:13:20.250Z")
        );
        assert_eq!(
            super::rfc3339(Some(951_782_400.0)).as_deref(),
            Some("2000-02-29T00:00:00.000Z")
        );
        assert_eq!(super::rfc3339(Some(0.0)), None);
    }
}
