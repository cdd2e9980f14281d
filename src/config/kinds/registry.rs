//! Hand-off of block devices from workloads to configs: a built-in workload
//! that creates devices (fsops's loop devices) publishes them here under its
//! name in `prepare`, and `blktrace` with `devices = "fsops"` traces exactly
//! those. Process-wide, because both live in the one sysdelta process and
//! the runner prepares workloads before it enters configs.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

static DEVICES: Mutex<BTreeMap<String, Vec<PathBuf>>> = Mutex::new(BTreeMap::new());

/// Publish the devices workload `name` created (replacing earlier ones).
pub fn publish(name: &str, devices: Vec<PathBuf>) {
    DEVICES.lock().unwrap().insert(name.to_string(), devices);
}

/// Withdraw them again (in the workload's cleanup).
pub fn withdraw(name: &str) {
    DEVICES.lock().unwrap().remove(name);
}

/// The devices workload `name` published, if any.
pub fn lookup(name: &str) -> Option<Vec<PathBuf>> {
    DEVICES.lock().unwrap().get(name).cloned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn publish_lookup_withdraw() {
        super::publish("t-registry", vec!["/dev/loop9".into()]);
        assert_eq!(
            super::lookup("t-registry"),
            Some(vec![std::path::PathBuf::from("/dev/loop9")])
        );
        super::withdraw("t-registry");
        assert_eq!(super::lookup("t-registry"), None);
    }
}
