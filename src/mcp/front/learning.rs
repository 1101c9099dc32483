//! Keeping [`Learned`](super::learned::Learned) current: the server's answers that pass
//! through, and (with `remember`) the lists the front reads for itself after each start
//! and after the server says one changed. Once a reading is over, the client hears of
//! each list that differs from what it was. Part of the front (methods of [`Front`]).

use std::time::Instant;

use serde_json::{Value, json};

use super::inflight::{Entry, Origin};
use super::learned::{self, LISTS, MAX_PAGES, RELIST_WAIT, Reading, Relist, Round};
use super::state::Front;
use crate::mcp::backend::Backend;
use crate::mcp::jsonrpc::message::{self, Message};
use crate::mcp::say;

/// Whether an answer to `method` tells the front something it keeps: `initialize` and
/// the lists.
pub(crate) fn learns_from(method: &str) -> bool {
    method == "initialize" || learned::list_key(method).is_some()
}

impl<B: Backend> Front<B> {
    /// Keep what an answer to the client tells about the server: its `initialize`
    /// result, a whole list.
    pub(crate) fn learn_from_answer(&mut self, method: &str, asked_a_page: bool, bytes: &[u8]) {
        if !learns_from(method) {
            return;
        }
        let Some(result) = serde_json::from_slice::<Value>(bytes)
            .ok()
            .and_then(|mut v| v.get_mut("result").map(Value::take))
        else {
            return;
        };
        if method == "initialize" {
            self.learned.initialize = Some(result);
        } else if !asked_a_page {
            self.learned.learn_list(method, &result);
        }
        self.save_learned();
    }

    /// Read every list the server declared, page by page; with `notify`, tell the client
    /// of each one that differs from before once all are read.
    pub(crate) fn read_lists(&mut self, notify: bool) {
        let methods: Vec<&str> = LISTS
            .iter()
            .map(|(method, _)| *method)
            .filter(|method| {
                let capability = method.split('/').next().unwrap_or_default();
                self.learned.has_capability(capability)
            })
            .collect();
        self.read_some(&methods, notify);
    }

    /// Read the lists `methods` again (the server said they changed).
    pub(crate) fn read_some(&mut self, methods: &[&str], notify: bool) {
        if methods.is_empty() {
            if notify {
                self.finish_round(Round {
                    before: self.learned.lists.clone(),
                    pending: 0,
                    notify,
                    answers: Vec::new(),
                });
            }
            return;
        }
        let round = self.learned.round.get_or_insert_with(|| Round {
            before: self.learned.lists.clone(),
            pending: 0,
            notify,
            answers: Vec::new(),
        });
        round.notify |= notify;
        round.pending += methods.len();
        for method in methods {
            self.ask_page(
                Reading {
                    method: (*method).to_owned(),
                    items: Vec::new(),
                    pages: 0,
                },
                None,
            );
        }
    }

    fn ask_page(&mut self, reading: Reading, cursor: Option<&Value>) {
        let Some(slot) = &self.slot else { return };
        let generation = slot.generation;
        let id = self.routing.proxy_id();
        let params = cursor.map_or_else(|| json!({}), |c| json!({"cursor": c}));
        let params = if self.stateless_client() {
            self.stateless.stamp(params)
        } else {
            params
        };
        let bytes = message::request(id, &reading.method, Some(&params));
        self.routing.inflight.insert(
            id,
            Entry {
                generation,
                origin: Origin::Learn(reading),
            },
        );
        self.backend.send(generation, bytes);
    }

    /// One page of a list the front reads for itself.
    pub(crate) fn on_learned_page(&mut self, mut reading: Reading, message: &Message) {
        let result = message
            .to_value()
            .and_then(|mut v| v.get_mut("result").map(Value::take));
        let key = learned::list_key(&reading.method).unwrap_or("tools");
        let Some(result) = result else {
            say(&format!(
                "the server refused `{}` when the {} read it: {}",
                reading.method,
                self.opts.role,
                String::from_utf8_lossy(message.bytes())
            ));
            self.learned.lists.remove(&reading.method);
            return self.list_read();
        };
        if let Some(items) = result.get(key).and_then(Value::as_array) {
            reading.items.extend(items.iter().cloned());
        }
        reading.pages += 1;
        match result.get("nextCursor").filter(|c| !c.is_null()) {
            Some(cursor) if reading.pages < MAX_PAGES => {
                let cursor = cursor.clone();
                self.ask_page(reading, Some(&cursor));
            }
            _ => {
                self.learned.lists.insert(reading.method, reading.items);
                self.list_read();
            }
        }
    }

    /// A reading ended (read or lost with its server).
    pub(crate) fn list_read(&mut self) {
        let Some(round) = &mut self.learned.round else {
            return;
        };
        round.pending = round.pending.saturating_sub(1);
        if round.pending > 0 {
            return;
        }
        if let Some(round) = self.learned.round.take() {
            self.finish_round(round);
        }
    }

    pub(crate) fn finish_round(&mut self, mut round: Round) {
        self.save_learned();
        let answers = std::mem::take(&mut round.answers);
        let methods = self.notify_round(&round);
        if methods.is_empty() || answers.is_empty() {
            for (raw_id, answer) in answers {
                self.reply_result(&raw_id, &answer);
            }
            return;
        }
        self.release_relist();
        self.learned.relist = Some(Relist {
            methods,
            answers,
            deadline: Instant::now() + RELIST_WAIT,
        });
    }

    /// The client was answered a listing `method`: answers waiting for it go out.
    pub(crate) fn relisted(&mut self, method: &str) {
        if self
            .learned
            .relist
            .as_ref()
            .is_some_and(|relist| relist.methods.iter().any(|m| m == method))
        {
            self.release_relist();
        }
    }

    /// Send the answers held for a relisting, whether or not it came.
    pub(crate) fn release_relist(&mut self) {
        if let Some(relist) = self.learned.relist.take() {
            for (raw_id, answer) in relist.answers {
                self.reply_result(&raw_id, &answer);
            }
        }
    }

    /// Tell the client of each list that differs; the methods it was told of.
    fn notify_round(&mut self, round: &Round) -> Vec<String> {
        let mut told = Vec::new();
        let stateless = self.stateless_client();
        if !round.notify || !(stateless || self.handshake.client_initialized()) {
            return told;
        }
        for (method, _) in LISTS {
            let Some(notification) = learned::list_changed(method) else {
                continue;
            };
            if round.before.get(method) == self.learned.lists.get(method) {
                continue;
            }
            let heard = if stateless {
                self.notify_listens(method.trim_end_matches("/list"))
            } else {
                self.send_client(message::notification(&notification, None));
                true
            };
            if heard {
                told.push(method.to_owned());
            }
        }
        told
    }

    pub(crate) fn save_learned(&self) {
        if !self.opts.remember {
            return;
        }
        if let Err(err) = self.learned.save(&self.opts.state_dir) {
            say(&format!(
                "cannot save what was learned from the server in {}: {err}",
                self.opts.state_dir.display()
            ));
        }
    }
}
