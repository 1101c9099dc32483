//! `debussy run` end to end with the simulated agent, one file a theme; [`kit`] holds
//! what they share.

mod formats;
mod full_disk;
mod git_work;
mod guards;
mod handoff;
mod hostile;
mod interrupts;
mod kit;
mod links;
mod locked_state;
mod merges;
mod monorepo;
mod orphans;
mod outcomes;
mod parallel;
mod read_only;
mod replaced;
mod restarts;
mod resume;
mod resume_stages;
mod user_checkout;
mod witness;
