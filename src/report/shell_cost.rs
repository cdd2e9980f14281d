//! The shell's start-up line as the reports print it (computed by
//! `analysis::shell_cost`): what `SHELL -c ''` took in each config, and
//! its share of each workload's median wall time.

use crate::analysis::Analysis;

/// The lines (a head, then one per config and shell); empty when no
/// command ran under a shell.
pub fn text_lines(a: &Analysis) -> Vec<String> {
    if a.shell_startup.is_empty() {
        return Vec::new();
    }
    let mut out = vec![
        "Shell start-up: `SHELL -c ''` timed after runs in the run's config (median); \
         the runs include it, nothing is subtracted (-N or shell = \"none\" runs a command \
         without a shell):"
            .to_string(),
    ];
    for s in &a.shell_startup {
        let shares: Vec<String> = s
            .workloads
            .iter()
            .map(|w| format!("{:.1}% of {}'s median wall", w.share * 100.0, w.workload))
            .collect();
        let mut line = format!(
            "  shell start-up, {} ({}): {}, {}",
            s.config,
            s.shell,
            super::units::fixed(s.median_s, "s", "ms", 3),
            crate::words::count(s.n, "sample")
        );
        if !shares.is_empty() {
            line.push_str(&format!("; {}", shares.join(", ")));
        }
        out.push(line);
    }
    out
}
