//! The statuses of a run and of an experiment: enums in the code, stored
//! and printed as the words they have always been ("ok", "complete", ...),
//! so stores, reports and JSON read the same as before.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How one run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// It gave its samples.
    Ok,
    /// It did not (exit status, timeout, a config that would not enter...);
    /// its reason is kept beside it.
    Failed,
}

/// Where an experiment stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExperimentStatus {
    /// Created and not finished (or its process died): `--resume` finishes it.
    Running,
    /// Every planned run ran (imports are complete when stored).
    Complete,
    /// Stopped by an error, or by a cell failing too often.
    Failed,
    /// Stopped by a signal, or left inside a config: `--resume` finishes it.
    Interrupted,
}

/// Where one boot of a kernel config stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BootStatus {
    /// QEMU was launched and the boot has not ended (or sysdelta died).
    Running,
    /// The guest ran its runs and powered off.
    Ok,
    /// Anything else; the reason and the console's tail are kept.
    Failed,
}

/// How the reason of a failed boot whose machine audit failed begins (a
/// kexec session's boot): its runs ran and are stored, but are kept out of
/// the analysis (`analysis::boots::audit_failed`).
pub const AUDIT_FAILED: &str = "the machine audit failed";

impl BootStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            BootStatus::Running => "running",
            BootStatus::Ok => "ok",
            BootStatus::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<BootStatus> {
        match s {
            "running" => Some(BootStatus::Running),
            "ok" => Some(BootStatus::Ok),
            "failed" => Some(BootStatus::Failed),
            _ => None,
        }
    }
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Ok => "ok",
            RunStatus::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<RunStatus> {
        match s {
            "ok" => Some(RunStatus::Ok),
            "failed" => Some(RunStatus::Failed),
            _ => None,
        }
    }
}

impl ExperimentStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ExperimentStatus::Running => "running",
            ExperimentStatus::Complete => "complete",
            ExperimentStatus::Failed => "failed",
            ExperimentStatus::Interrupted => "interrupted",
        }
    }

    pub fn parse(s: &str) -> Option<ExperimentStatus> {
        match s {
            "running" => Some(ExperimentStatus::Running),
            "complete" => Some(ExperimentStatus::Complete),
            "failed" => Some(ExperimentStatus::Failed),
            "interrupted" => Some(ExperimentStatus::Interrupted),
            _ => None,
        }
    }
}

/// Stored and shown as its word, whichever status it is.
macro_rules! as_text {
    ($t:ty) => {
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        /// Compares with the stored word (`r.status == "ok"`).
        impl PartialEq<&str> for $t {
            fn eq(&self, word: &&str) -> bool {
                self.as_str() == *word
            }
        }
    };
}

as_text!(RunStatus);
as_text!(ExperimentStatus);
as_text!(BootStatus);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_reads_back_as_the_word_it_is_stored_as() {
        for s in [RunStatus::Ok, RunStatus::Failed] {
            assert_eq!(RunStatus::parse(s.as_str()), Some(s));
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{s}\""));
        }
        for s in [
            ExperimentStatus::Running,
            ExperimentStatus::Complete,
            ExperimentStatus::Failed,
            ExperimentStatus::Interrupted,
        ] {
            assert_eq!(ExperimentStatus::parse(s.as_str()), Some(s));
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{s}\""));
        }
        for s in [BootStatus::Running, BootStatus::Ok, BootStatus::Failed] {
            assert_eq!(BootStatus::parse(s.as_str()), Some(s));
        }
        assert_eq!(RunStatus::parse("OK"), None);
    }
}
