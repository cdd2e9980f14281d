//! Kernel experiments in the HTML report: the boots section (per config
//! boots ok/failed, kernel, CPUs, accel, launch-to-hello; each failed boot
//! with its whole console tail). The TCG warning is the first of the
//! warnings, in the banner at the top.

use std::fmt::Write as _;

use super::esc;
use crate::analysis::Analysis;
use crate::report::boots_text::runs;

/// The "Samples per metric" introduction when values are per boot.
pub(super) const SAMPLES_INTRO: &str = "<p>First: each boot's value per config (the mean of \
    its runs' values, a run's value being the median of its samples): the boot is the unit of \
    replication. The median (black bar) and its 95% order-statistic CI (thick vertical bar) are \
    over boots. Beside it (below it on a phone): every run's value in execution order, so drift and the steps between \
    boots show.</p>";

fn join<T: ToString>(xs: &[T]) -> String {
    if xs.is_empty() {
        return "-".into();
    }
    xs.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The boots section; nothing for a host experiment.
pub(super) fn section(o: &mut String, a: &Analysis) {
    let Some(b) = &a.boots else {
        return;
    };
    o.push_str("<h2 id=\"boots\">Boots</h2>");
    o.push_str(
        "<p>One VM booted per boot. Kernel and CPUs are what the guests of the ok boots \
         reported, checked against the config before any run was assigned.</p>",
    );
    o.push_str(
        "<div class=\"scroll\"><table><thead><tr><th class=\"l\">config</th><th>boots</th>\
         <th>ok</th><th>failed</th><th>running</th><th class=\"l\">kernel (uname -r)</th>\
         <th>cpus</th><th class=\"l\">accel</th><th>launch to hello (s), median [range]</th>\
         </tr></thead><tbody>",
    );
    for c in &b.configs {
        let _ = write!(
            o,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td class=\"l\">{}</td><td>{}</td><td class=\"l\">{}</td><td>{}</td></tr>",
            esc(&c.config),
            c.boots,
            c.ok,
            if c.failed > 0 {
                format!("<b>{}</b>", c.failed)
            } else {
                "0".into()
            },
            c.running,
            esc(&join(&c.kernels)),
            join(&c.cpus),
            esc(&join(&c.accel)),
            crate::report::boots_text::hello_range(c.launch_to_hello_s.as_ref())
        );
    }
    o.push_str("</tbody></table></div>");
    for c in &b.configs {
        for f in &c.failed_boots {
            let _ = write!(
                o,
                "<p>Failed boot {} of <b>{}</b> (block {}, {} delivered and kept): {}</p>",
                f.id,
                esc(&c.config),
                f.block,
                runs(f.runs),
                esc(&f.reason)
            );
            if !f.console_tail.trim().is_empty() {
                let _ = write!(o, "<pre>{}</pre>", esc(&f.console_tail));
            }
        }
    }
}
