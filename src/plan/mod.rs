//! Markdown plans: the master plan, its phase files, the audit and the execution order.
//!
//! Parsing (`master`, `phase`, `gates`, `agents`, `refs` over the `markdown` view) and
//! the audit (`audit`, `topo`) are pure. Only [`load()`] (plan files),
//! [`AgentCatalog::discover`] (agent directories), `nearby` (the "did you mean" for a
//! mistyped plan path) and [`inspect()`] (all three) read the file system. The format is documented for users in `docs/plan-format.md`.
//!
//! The orchestrator's entry points: [`inspect()`] (or [`load()`] + [`audit()`]),
//! [`execution_order`], and [`Gate::resolve`] for each gate's command.

pub(crate) mod agents;
pub(crate) mod audit;
pub(crate) mod gates;
pub(crate) mod inspect;
pub(crate) mod load;
pub(crate) mod markdown;
pub(crate) mod master;
pub mod model;
pub(crate) mod nearby;
pub(crate) mod phase;
pub(crate) mod refs;
pub(crate) mod topo;

pub use agents::{AgentCatalog, AgentSource, BUILTIN_AGENTS, agent_dirs};
pub use audit::{
    AuditContext, AuditReport, Issue, IssueCode, JsonReport, Severity, Summary, audit,
};
pub use inspect::{Inspection, inspect};
pub use load::{MASTER_FILE, PlanError, load};
pub use model::{
    Dependency, DependencyTarget, Gate, GateCommand, GateOrigin, Location, NotesPath, Phase,
    PhaseFile, PhaseId, PhaseStatus, Plan, Problem, ProblemScope, ProcessStep, RequiredAgent, Task,
};
pub use topo::{Cycle, execution_order, find_cycles};
