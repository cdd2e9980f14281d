//! Configurations: named system states, entered before runs and always left.

pub mod kind;
