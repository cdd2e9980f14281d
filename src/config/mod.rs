//! Configurations: named system states, entered before runs and always left.

pub mod kind;
pub mod runtime;
pub mod shell;
