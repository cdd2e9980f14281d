//! Configurations: named system states, entered before runs and always left.

pub mod journal;
pub mod kind;
pub mod kinds;
pub mod rcu;
pub mod runtime;
pub mod shell;
