//! Dependency order and cycles.
//!
//! The execution order is topological (a phase comes after every phase it depends on),
//! with ties broken by the order of the master plan's table. Dependencies on ids that are
//! not in the plan are ignored here (the audit warns about them). A phase id used twice
//! resolves to its first row. Pure.

use std::collections::VecDeque;
use std::fmt;

use super::model::{Phase, PhaseId, Plan};

/// A dependency cycle, as the ids met when following "depends on" from its first phase
/// (in plan order) back to itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cycle(pub Vec<PhaseId>);

impl fmt::Display for Cycle {
    /// `1 -> 3 -> 2 -> 1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for id in &self.0 {
            write!(f, "{id} -> ")?;
        }
        match self.0.first() {
            Some(first) => write!(f, "{first}"),
            None => Ok(()),
        }
    }
}

/// For each phase, the indices of the phases it depends on (unknown ids left out).
fn edges(plan: &Plan) -> Vec<Vec<usize>> {
    let index_of = |id: &PhaseId| plan.phases.iter().position(|p| &p.id == id);
    plan.phases
        .iter()
        .map(|phase| {
            let mut out: Vec<usize> = phase.dependency_ids().filter_map(index_of).collect();
            out.sort_unstable();
            out.dedup();
            out
        })
        .collect()
}

/// The phases in the order a run executes them.
///
/// # Errors
/// The plan's dependency cycles, when there are any (no order exists then).
pub fn execution_order(plan: &Plan) -> Result<Vec<&Phase>, Vec<Cycle>> {
    let edges = edges(plan);
    let mut placed = vec![false; plan.phases.len()];
    let mut order = Vec::with_capacity(plan.phases.len());
    while order.len() < plan.phases.len() {
        let next = (0..plan.phases.len())
            .find(|&i| !placed[i] && edges[i].iter().all(|&d| placed[d] && d != i));
        let Some(next) = next else {
            return Err(find_cycles(plan));
        };
        placed[next] = true;
        order.push(&plan.phases[next]);
    }
    Ok(order)
}

/// Every dependency cycle of the plan, one per strongly connected group of phases,
/// each shown as the shortest way around from the group's first phase.
#[must_use]
pub fn find_cycles(plan: &Plan) -> Vec<Cycle> {
    let edges = edges(plan);
    let n = edges.len();
    let reach: Vec<Vec<bool>> = (0..n).map(|start| reachable(&edges, start)).collect();
    let mut seen = vec![false; n];
    let mut cycles = Vec::new();
    for start in 0..n {
        if seen[start] || !reach[start][start] {
            continue;
        }
        for other in 0..n {
            if reach[start][other] && reach[other][start] {
                seen[other] = true;
            }
        }
        if let Some(path) = shortest_loop(&edges, start) {
            cycles.push(Cycle(
                path.into_iter()
                    .map(|i| plan.phases[i].id.clone())
                    .collect(),
            ));
        }
    }
    cycles
}

/// Which nodes can be reached from `start` by one or more steps.
fn reachable(edges: &[Vec<usize>], start: usize) -> Vec<bool> {
    let mut seen = vec![false; edges.len()];
    let mut queue: VecDeque<usize> = edges[start].iter().copied().collect();
    while let Some(node) = queue.pop_front() {
        if !seen[node] {
            seen[node] = true;
            queue.extend(edges[node].iter().copied());
        }
    }
    seen
}

/// The shortest path `start → … → start`, without the final `start`.
fn shortest_loop(edges: &[Vec<usize>], start: usize) -> Option<Vec<usize>> {
    let mut parent: Vec<Option<usize>> = vec![None; edges.len()];
    let mut queue = VecDeque::from([start]);
    let mut visited = vec![false; edges.len()];
    while let Some(node) = queue.pop_front() {
        for &next in &edges[node] {
            if next == start {
                let mut path = vec![node];
                let mut at = node;
                while let Some(p) = parent[at] {
                    path.push(p);
                    at = p;
                }
                path.reverse();
                if path.first() != Some(&start) {
                    path.insert(0, start);
                }
                return Some(path);
            }
            if !visited[next] {
                visited[next] = true;
                parent[next] = Some(node);
                queue.push_back(next);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::plan::load::assemble;

    /// A plan whose phase `id` depends on `deps`, phases listed in the given order.
    fn plan(phases: &[(&str, &[&str])]) -> Plan {
        let mut master = String::from("| Phase | Title |\n|---|---|\n");
        for (id, _) in phases {
            master.push_str(&format!("| {id} | [P{id}](p{id}.md) |\n"));
        }
        let bodies: Vec<(String, String)> = phases
            .iter()
            .map(|(id, deps)| {
                let deps: Vec<String> = deps.iter().map(|d| format!("Phase {d}")).collect();
                let field = if deps.is_empty() {
                    "None".to_owned()
                } else {
                    deps.join(", ")
                };
                (format!("p{id}.md"), format!("**Depends On:** {field}\n"))
            })
            .collect();
        assemble(Path::new("m.md"), &master, |path: &Path| {
            bodies
                .iter()
                .find(|(p, _)| Path::new(p) == path)
                .map(|(_, body)| body.clone())
                .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))
        })
    }

    fn ids(phases: &[&Phase]) -> Vec<String> {
        phases.iter().map(|p| p.id.to_string()).collect()
    }

    #[test]
    fn order_follows_dependencies_then_plan_order() {
        let p = plan(&[
            ("1", &[]),
            ("3", &["2"]),
            ("2", &["1"]),
            ("4", &[]),
            ("5", &["9"]),
        ]);
        assert_eq!(
            ids(&execution_order(&p).expect("acyclic")),
            ["1", "2", "3", "4", "5"]
        );
        let p = plan(&[("2", &["1"]), ("1", &[])]);
        assert_eq!(ids(&execution_order(&p).expect("acyclic")), ["1", "2"]);
        assert!(find_cycles(&p).is_empty());
    }

    #[test]
    fn the_fixture_cycle_reads_from_its_first_phase() {
        let p = plan(&[("1", &["3"]), ("2", &["1"]), ("3", &["2"])]);
        let cycles = execution_order(&p).expect_err("cyclic");
        assert_eq!(cycles.len(), 1);
        assert_eq!(cycles[0].to_string(), "1 -> 3 -> 2 -> 1");
    }

    #[test]
    fn self_loops_and_separate_cycles() {
        let p = plan(&[("1", &["1"]), ("2", &["3"]), ("3", &["2"]), ("4", &["2"])]);
        let cycles: Vec<String> = find_cycles(&p).iter().map(ToString::to_string).collect();
        assert_eq!(cycles, ["1 -> 1", "2 -> 3 -> 2"]);
    }

    #[test]
    fn the_shortest_way_around_is_shown() {
        // 1 -> 2 -> 3 -> 1 and 1 -> 3 -> 1: the short one is reported.
        let p = plan(&[("1", &["2", "3"]), ("2", &["3"]), ("3", &["1"])]);
        let cycles: Vec<String> = find_cycles(&p).iter().map(ToString::to_string).collect();
        assert_eq!(cycles, ["1 -> 3 -> 1"]);
    }
}
