// SPDX-License-Identifier: MIT
//! ring-tokio: the ring benchmark (docs/ring.md) on tokio tasks.  Each task's
//! inbox is a `tokio::sync::mpsc` channel; coroutine 0 of a ring sends to its
//! right neighbour's inbox, the others relay from their own inbox to the
//! right.  The channel is the unbounded one: with one message in flight per
//! ring an inbox never holds more than one message anyway, and its send needs
//! no permit from a semaphore, which made it about 1.5x faster here than
//! `mpsc::channel(1)` (see docs/ring.md).  `--runtime current` runs every task on a
//! current-thread runtime (impl "tokio-1t"); `--runtime multi` on the
//! multi-thread runtime with its default worker count, one per core ("tokio").

use std::process::exit;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{mpsc, Notify};

struct Opts {
    n: usize,
    coroutines: usize,
    rounds: usize,
    runs: usize,
    multi: bool,
}

fn usage(msg: &str) -> ! {
    eprintln!("ring-tokio: {msg}");
    eprintln!(
        "usage: ring-tokio --n N --coroutines C --rounds M [--runs R] [--runtime current|multi]"
    );
    exit(2);
}

fn parse() -> Opts {
    let mut o = Opts {
        n: 0,
        coroutines: 0,
        rounds: 0,
        runs: 1,
        multi: false,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let name = args[i].as_str();
        let value = args
            .get(i + 1)
            .unwrap_or_else(|| usage(&format!("{name} needs a value")));
        let num = || -> usize {
            match value.parse::<usize>() {
                Ok(v) if v >= 1 => v,
                _ => usage(&format!("{name} wants a positive integer, got '{value}'")),
            }
        };
        match name {
            "--n" => o.n = num(),
            "--coroutines" => o.coroutines = num(),
            "--rounds" => o.rounds = num(),
            "--runs" => o.runs = num(),
            "--runtime" => {
                o.multi = match value.as_str() {
                    "current" => false,
                    "multi" => true,
                    _ => usage("--runtime must be current or multi"),
                }
            }
            _ => usage(&format!("unknown argument '{name}'")),
        }
        i += 2;
    }
    if o.n == 0 || o.coroutines == 0 || o.rounds == 0 {
        usage("--n, --coroutines and --rounds are required");
    }
    if o.n < 2 {
        usage("--n must be at least 2 (a ring of one has no neighbour)");
    }
    if o.coroutines % o.n != 0 {
        usage(&format!(
            "--coroutines {} is not a multiple of --n {}",
            o.coroutines, o.n
        ));
    }
    o
}

/// VmRSS of this process in bytes (0 if /proc is unreadable).
fn rss_bytes() -> i64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<i64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// Counts down to zero; the task that reaches zero wakes the waiter
/// (`notify_one` keeps a permit if nobody waits yet, so no wake-up is lost).
struct Countdown {
    left: AtomicUsize,
    zero: Notify,
}

impl Countdown {
    fn new(n: usize) -> Arc<Self> {
        Arc::new(Countdown {
            left: AtomicUsize::new(n),
            zero: Notify::new(),
        })
    }
    fn done(&self) {
        // AcqRel: the last one sees every earlier decrement's writes and
        // publishes them to the waiter.
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.zero.notify_one();
        }
    }
    async fn wait(&self) {
        self.zero.notified().await;
    }
}

/// One run: spawns the rings, waits until every task has started (and is
/// about to block on its inbox), measures the RSS they added (first run
/// only), then times the rings to completion.  Returns msgs/s and the number
/// of rounds that came back wrong.
async fn one_run(o: &Opts, rss_per_coro: Option<&mut f64>) -> (f64, i64) {
    let (n, rounds) = (o.n, o.rounds);
    let ready = Countdown::new(o.coroutines);
    let done = Countdown::new(o.coroutines / n);
    let errors = Arc::new(AtomicI64::new(0));
    let rss0 = rss_bytes();
    let mut starters = Vec::with_capacity(o.coroutines / n);

    for _ in 0..o.coroutines / n {
        let (txs, mut rxs): (Vec<_>, Vec<_>) =
            (0..n).map(|_| mpsc::unbounded_channel::<usize>()).unzip();
        starters.push(txs[0].clone());
        for i in (0..n).rev() {
            let mut inbox = rxs.pop().unwrap();
            let right = txs[(i + 1) % n].clone();
            let ready = ready.clone();
            if i == 0 {
                let done = done.clone();
                let errors = errors.clone();
                tokio::spawn(async move {
                    ready.done();
                    let mut v = inbox.recv().await.unwrap(); // start token
                    let mut bad = 0;
                    for _ in 0..rounds {
                        if right.send(v + 1).is_err() {
                            break;
                        }
                        let back = inbox.recv().await.unwrap();
                        if back != v + n {
                            bad += 1;
                        }
                        v = back;
                    }
                    // Relaxed: a sum read after the run is complete (the
                    // countdown's AcqRel orders it).
                    errors.fetch_add(bad, Ordering::Relaxed);
                    done.done();
                });
            } else {
                tokio::spawn(async move {
                    ready.done();
                    for _ in 0..rounds {
                        let v = inbox.recv().await.unwrap();
                        if right.send(v + 1).is_err() {
                            break;
                        }
                    }
                });
            }
        }
    }
    ready.wait().await;
    if let Some(rss) = rss_per_coro {
        *rss = (rss_bytes() - rss0) as f64 / o.coroutines as f64;
    }
    let t0 = Instant::now();
    for s in &starters {
        s.send(0).expect("start token");
    }
    done.wait().await;
    let elapsed = t0.elapsed().as_secs_f64();
    drop(starters);
    (
        (o.coroutines * o.rounds) as f64 / elapsed,
        errors.load(Ordering::Relaxed),
    )
}

fn main() {
    let o = parse();
    let impl_name = if o.multi { "tokio" } else { "tokio-1t" };
    let params = format!(
        "{{\"n\":{},\"coroutines\":{},\"rounds\":{}}}",
        o.n, o.coroutines, o.rounds
    );
    let rt = if o.multi {
        tokio::runtime::Builder::new_multi_thread().build()
    } else {
        tokio::runtime::Builder::new_current_thread().build()
    };
    let rt = rt.unwrap_or_else(|e| {
        eprintln!("ring-tokio: cannot build the runtime: {e}");
        exit(1)
    });
    let mut samples = Vec::with_capacity(o.runs);
    let mut rss = 0.0;
    for r in 0..o.runs {
        let (rate, bad) = rt.block_on(one_run(&o, if r == 0 { Some(&mut rss) } else { None }));
        if bad != 0 {
            let msg = format!("{bad} rounds came back with a wrong message");
            eprintln!("{msg}");
            println!(
                "{{\"suite\":\"ring\",\"impl\":\"{impl_name}\",\"peer\":true,\"metric\":\"msgs_per_s\",\"value\":null,\"unit\":\"msgs/s\",\"status\":\"failed\",\"error\":\"{msg}\",\"params\":{params},\"runs\":{}}}",
                o.runs
            );
            exit(1);
        }
        samples.push(rate);
    }
    let mut sorted = samples.clone();
    sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let k = sorted.len();
    let med = if k % 2 == 1 {
        sorted[k / 2]
    } else {
        (sorted[k / 2 - 1] + sorted[k / 2]) / 2.0
    };
    let list: Vec<String> = samples.iter().map(|s| format!("{s:.1}")).collect();
    println!(
        "{{\"suite\":\"ring\",\"impl\":\"{impl_name}\",\"peer\":true,\"metric\":\"msgs_per_s\",\"value\":{med:.1},\"unit\":\"msgs/s\",\"params\":{params},\"runs\":{k},\"min\":{:.1},\"max\":{:.1},\"samples\":[{}]}}",
        sorted[0],
        sorted[k - 1],
        list.join(",")
    );
    println!(
        "{{\"suite\":\"ring\",\"impl\":\"{impl_name}\",\"peer\":true,\"metric\":\"rss_bytes_per_coro\",\"value\":{rss:.1},\"unit\":\"bytes\",\"params\":{params},\"runs\":1,\"min\":{rss:.1},\"max\":{rss:.1}}}"
    );
}
