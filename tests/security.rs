mod common;
#[path = "security/outage.rs"]
mod outage;
