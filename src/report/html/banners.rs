//! The boxes above the summary: imported samples, and the warnings,
//! folded to one line.

use std::fmt::Write as _;

use super::{esc, Extras};
use crate::analysis::Analysis;

/// The imported-samples note and the warnings box, as the page opens.
pub fn banners(o: &mut String, a: &Analysis, x: &Extras) {
    let imported: Vec<_> = x
        .sources
        .iter()
        .filter_map(|s| s.imported_from.as_ref().map(|f| (s, f)))
        .collect();
    if !imported.is_empty() {
        o.push_str("<div class=\"box\" role=\"note\"><b>Imported samples.</b> ");
        o.push_str("These were not measured by sysdelta: no randomized interleaving, no environment fingerprint unless the file had one.<ul>");
        for (s, f) in imported {
            let _ = write!(o, "<li>{}: imported from {}</li>", esc(&s.title), esc(f));
        }
        o.push_str("</ul></div>");
    }
    if !x.banner.is_empty() || !a.warnings.is_empty() {
        // Collapsed to one line: listed in full, they filled a phone's
        // first screen before the summary. The count stays in view.
        // One warning is short: it is shown open.
        let n = x.banner.len() + a.warnings.len();
        let _ = write!(
            o,
            "<details class=\"box warn\" role=\"alert\"{}><summary><b>Warnings ({n}).</b> {}</summary><ul>",
            if n == 1 { " open" } else { "" },
            if n == 1 { String::new() } else { esc(&warning_gist(x.banner.iter().chain(&a.warnings))) }
        );
        for w in x.banner.iter().chain(&a.warnings) {
            let _ = write!(o, "<li>{}</li>", esc(w));
        }
        o.push_str("</ul></details>");
    }
}

/// The warnings' kinds for the collapsed box's summary line: each one's
/// words before its first colon or parenthesis, once each, at most three.
fn warning_gist<'a>(ws: impl Iterator<Item = &'a String>) -> String {
    let mut kinds: Vec<&str> = Vec::new();
    for w in ws {
        let k = w.split([':', '(']).next().unwrap_or(w).trim();
        if !k.is_empty() && !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    let more = kinds.len().saturating_sub(3);
    let mut s = kinds.into_iter().take(3).collect::<Vec<_>>().join("; ");
    if more > 0 {
        let _ = write!(s, "; {more} more");
    }
    s
}
