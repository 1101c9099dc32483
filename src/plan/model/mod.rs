//! The plan as data: a master plan, its phases, and everything a phase file declares
//! (status, dependencies, gates, tasks, required agents, notes, process steps).
//!
//! Every item the audit can point at carries a [`Location`] (file and 1-based line), so a
//! report can say exactly where to look. Nothing here reads files or knows about
//! markdown: the master-plan and phase-file parsers build these values.

mod gate;
mod id;
mod location;
mod phase;
mod plan;
mod status;

pub use gate::{Gate, GateCommand, GateOrigin};
pub use id::{Dependency, DependencyTarget, PhaseId};
pub use location::Location;
pub use phase::{NotesPath, Phase, PhaseFile, ProcessStep, RequiredAgent, Task};
pub use plan::{Plan, Problem, ProblemScope, resolve_path};
pub use status::{PhaseStatus, STATUS_WORDS};
