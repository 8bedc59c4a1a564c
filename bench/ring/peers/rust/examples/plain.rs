// SPDX-License-Identifier: MIT
//! plain: the ring written the way tokio's documentation writes tokio code,
//! to check that `ring-tokio` is no slower than that (docs/ring.md, "tokio
//! at 400,000 tasks").  Not part of the suite: no barrier, no JSON, no error
//! count; the clock runs from the start tokens to the last ring's end, so on
//! the current-thread runtime it also covers every task's first poll.
//!
//!   cargo run --release --example plain -- N C M [current|multi] [unbounded|bounded]
//!
//! N tasks per ring, C tasks in all, M rounds.  `bounded` uses
//! `mpsc::channel(1)` and `send().await` (the documentation's channel),
//! `unbounded` (the default) `mpsc::unbounded_channel`, as ring-tokio does.

use std::time::Instant;

use tokio::sync::mpsc;

fn arg(i: usize, default: &str) -> String {
    std::env::args().nth(i).unwrap_or_else(|| default.to_string())
}

fn num(i: usize) -> usize {
    match arg(i, "").parse::<usize>() {
        Ok(v) if v >= 1 => v,
        _ => {
            eprintln!("usage: plain N C M [current|multi] [unbounded|bounded] (positive integers)");
            std::process::exit(2);
        }
    }
}

/// utime + stime of this process in seconds (10 ms ticks): on a shared
/// machine the wall clock also counts other programs' time.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rfind(')').map_or("", |p| &stat[p + 1..]);
    let f: Vec<f64> = after_name
        .split_whitespace()
        .map(|s| s.parse().unwrap_or(0.0))
        .collect();
    if f.len() > 12 {
        (f[11] + f[12]) / 100.0
    } else {
        0.0
    }
}

/// One ring's channels: the sending and receiving ends of either kind.
enum Tx {
    Bounded(mpsc::Sender<usize>),
    Unbounded(mpsc::UnboundedSender<usize>),
}
enum Rx {
    Bounded(mpsc::Receiver<usize>),
    Unbounded(mpsc::UnboundedReceiver<usize>),
}

impl Tx {
    async fn send(&self, v: usize) -> bool {
        match self {
            Tx::Bounded(t) => t.send(v).await.is_ok(),
            Tx::Unbounded(t) => t.send(v).is_ok(),
        }
    }
}

impl Rx {
    async fn recv(&mut self) -> Option<usize> {
        match self {
            Rx::Bounded(r) => r.recv().await,
            Rx::Unbounded(r) => r.recv().await,
        }
    }
}

fn channel(bounded: bool) -> (Tx, Rx) {
    if bounded {
        let (t, r) = mpsc::channel(1);
        (Tx::Bounded(t), Rx::Bounded(r))
    } else {
        let (t, r) = mpsc::unbounded_channel();
        (Tx::Unbounded(t), Rx::Unbounded(r))
    }
}

fn clone_tx(t: &Tx) -> Tx {
    match t {
        Tx::Bounded(t) => Tx::Bounded(t.clone()),
        Tx::Unbounded(t) => Tx::Unbounded(t.clone()),
    }
}

fn main() {
    let (n, coroutines, rounds) = (num(1), num(2), num(3));
    let multi = arg(4, "current") == "multi";
    let bounded = arg(5, "unbounded") == "bounded";
    if n < 2 || coroutines % n != 0 {
        eprintln!("plain: N must be at least 2 and divide C");
        std::process::exit(2);
    }
    let rt = if multi {
        tokio::runtime::Builder::new_multi_thread().enable_all().build()
    } else {
        tokio::runtime::Builder::new_current_thread().enable_all().build()
    }
    .expect("runtime");

    let (rate, cpu) = rt.block_on(async move {
        let mut heads = Vec::new();
        let mut starters = Vec::new();
        for _ in 0..coroutines / n {
            let (txs, mut rxs): (Vec<Tx>, Vec<Rx>) = (0..n).map(|_| channel(bounded)).unzip();
            starters.push(clone_tx(&txs[0]));
            for i in (0..n).rev() {
                let mut inbox = rxs.pop().unwrap();
                let right = clone_tx(&txs[(i + 1) % n]);
                let task = tokio::spawn(async move {
                    if i == 0 {
                        let mut v = inbox.recv().await.unwrap(); // start token
                        for _ in 0..rounds {
                            if !right.send(v + 1).await {
                                break;
                            }
                            v = inbox.recv().await.unwrap();
                        }
                    } else {
                        for _ in 0..rounds {
                            let Some(v) = inbox.recv().await else { break };
                            if !right.send(v + 1).await {
                                break;
                            }
                        }
                    }
                });
                if i == 0 {
                    heads.push(task);
                }
            }
        }
        let cpu0 = cpu_seconds();
        let t0 = Instant::now();
        for s in &starters {
            s.send(0).await;
        }
        for h in heads {
            h.await.expect("ring task");
        }
        let elapsed = t0.elapsed().as_secs_f64();
        (
            (coroutines * rounds) as f64 / elapsed,
            cpu_seconds() - cpu0,
        )
    });
    println!(
        "plain runtime={} channel={} n={n} coroutines={coroutines} rounds={rounds} msgs_per_s={rate:.0} cpu_s={cpu:.2}",
        if multi { "multi" } else { "current" },
        if bounded { "bounded" } else { "unbounded" },
    );
}
