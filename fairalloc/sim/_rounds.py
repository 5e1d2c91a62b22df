"""The arithmetic of a simulated round, shared by stepping and fast-forwarding
(`fairalloc.sim.simulator`).

`_run_jobs` advances the running jobs through one round (event-accurate: regime boundaries and
the finish inside the round); it takes any leading batch shape, so that `_steady_rounds` can
evaluate a whole block of future rounds with the very same floating-point operations a
round-by-round simulation performs. `_repeat_add` adds the same increment ``count`` times,
rounding after each addition as a loop would (``np.cumsum`` accumulates sequentially), so a
fast-forwarded run of identical rounds leaves every counter bit-for-bit where stepping leaves
it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: ACCURACY: relative tolerance for "the job's last epoch ends within the round"
_FINISH_RTOL = 1e-9
#: ACCURACY: a regime whose remaining epochs fall below this is finished (float round-off)
_EPOCH_TOL = 1e-9
#: ACCURACY: absolute slack (seconds) of "the job's last epoch ends within the round"
FINISH_ATOL = 1e-9
#: ACCURACY: floor of the GPU ratio under the logarithm of the elastic speed-up (no log(0)
#: warning)
MIN_GPU_RATIO = 1e-300
#: ACCURACY: upstream's restart overhead is charged only when a job's run in the round is longer
#: than the round less this many seconds (``self._time_per_iteration - 5 < execution_time``,
#: uw-mad-dash/shockwave scheduler/scheduler.py:1957-1960)
UPSTREAM_SHORT_RUN_SLACK = 5.0
#: ACCURACY: steps (whole numbers under upstream's mechanics) within this of a job's remaining
#: steps finish it (float round-off of epochs x steps-per-epoch)
STEP_TOL = 1e-6
#: PERFORMANCE: array elements (rounds x jobs x regimes) one block of a fast-forward scan or
#: of a repeated addition holds (bounds its memory; a block is a few vectorised operations)
BLOCK_ELEMENTS = 1 << 20


def _speedup(g: np.ndarray, w: np.ndarray, eff: np.ndarray) -> np.ndarray:
    """Elastic speed-up of ``g`` GPUs over the gang ``w``: ``(g/w) * eff**log2(g/w)``."""
    ratio = g / w
    with np.errstate(divide="ignore"):
        return np.where(ratio == 1.0, 1.0, ratio * eff ** np.log2(np.maximum(ratio, MIN_GPU_RATIO)))


@dataclass(frozen=True)
class _JobRows:
    """The workload rows of the jobs that run (constant over a run of identical rounds)."""

    epochs: np.ndarray  # (s, R) epochs of every regime (0 in padding)
    real: np.ndarray  # (s, R) the regime exists
    nreg: np.ndarray  # (s,) number of regimes
    total: np.ndarray  # (s,) total epochs
    sec_eff: np.ndarray  # (s, R) seconds per epoch with the GPUs held (slowest type, speed-up)


@dataclass(frozen=True)
class _Outcome:
    """One round of the running jobs (any leading batch shape ``...``)."""

    fin: np.ndarray  # (..., s) finished in the round
    moved: np.ndarray  # (..., s) entered a later regime (before round-off roll)
    roll: np.ndarray  # (..., s) completed its regime to round-off: moves on
    adv: np.ndarray  # (..., s) epochs advanced in the regime it ends in
    run_time: np.ndarray  # (..., s) seconds held (restart overhead included)
    regime: np.ndarray  # (..., s) regime after the round
    in_regime: np.ndarray  # (..., s) epochs done in it
    epochs_done: np.ndarray  # (..., s)
    #: (s,) seconds of ``run_time`` that count as the job's time on its type: all of it, but
    #: under upstream's mechanics the overhead charged is not (scheduler.py:1966-1968)
    counted: np.ndarray | None = None


def _run_jobs(rows: _JobRows, regime: np.ndarray, in_regime: np.ndarray, avail: np.ndarray,
              overhead: np.ndarray) -> _Outcome:
    """Advance the running jobs through one round of ``avail`` seconds of work (after
    ``overhead`` seconds of restart), event-accurately through their regimes.

    ``regime`` and ``in_regime`` may carry leading batch dimensions (one row per candidate
    round); ``rows``, ``avail`` and ``overhead`` are per job. Every operation is elementwise or
    an accumulation along the regimes, so a batch row gives bit-for-bit what a single call
    with that row gives.
    """
    E, R = rows.epochs, rows.epochs.shape[1]
    reg_idx = np.arange(R)
    cur = regime[..., None]
    sec_eff = np.broadcast_to(rows.sec_eff, regime.shape + (R,))
    epochs = np.broadcast_to(E, regime.shape + (R,))
    cur_left = np.take_along_axis(epochs, cur, axis=-1)[..., 0] - in_regime
    rem = np.where(reg_idx > cur, epochs, 0.0)
    rem = np.where(reg_idx == cur, np.maximum(cur_left, 0.0)[..., None], rem)
    rem = np.where(rows.real, rem, 0.0)
    with np.errstate(invalid="ignore"):
        need = np.where(rem > 0, rem * sec_eff, 0.0)
    cum = np.cumsum(need, axis=-1)
    fin = cum[..., -1] <= avail * (1.0 + _FINISH_RTOL) + FINISH_ATOL
    ri = np.minimum((cum <= avail[..., None]).sum(axis=-1), R - 1)
    prev_cum = np.where(ri > 0, np.take_along_axis(
        cum, np.maximum(ri - 1, 0)[..., None], axis=-1)[..., 0], 0.0)
    sec_ri = np.take_along_axis(sec_eff, ri[..., None], axis=-1)[..., 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        adv = np.where(fin, 0.0, (avail - prev_cum) / sec_ri)
    run_time = np.where(fin, cum[..., -1], avail) + overhead
    moved = ri != regime
    new_in = np.where(moved, 0.0, in_regime) + adv
    # epochs done: all regimes before ri fully, plus progress in ri
    full_before = np.where(reg_idx < ri[..., None], epochs, 0.0).sum(axis=-1)
    epochs_new = np.where(fin, rows.total, full_before + new_in)
    # a regime completed to round-off moves on
    ep_ri = np.take_along_axis(epochs, ri[..., None], axis=-1)[..., 0]
    roll = (~fin) & (new_in >= ep_ri - _EPOCH_TOL) & (ri + 1 < rows.nreg)
    ri = np.where(roll, ri + 1, ri)
    new_in = np.where(roll, 0.0, new_in)
    last = rows.nreg - 1
    return _Outcome(fin=fin, moved=moved, roll=roll, adv=adv, run_time=run_time,
                    regime=np.where(fin, last, ri),
                    in_regime=np.where(fin, np.take_along_axis(E, last[:, None], axis=1)[:, 0],
                                       new_in),
                    epochs_done=epochs_new)


def _steady(out: _Outcome) -> np.ndarray:
    """``(...,)``: no running job finishes or changes regime in the round."""
    return ~(out.fin | out.moved | out.roll).any(axis=-1)


def _steady_rounds(rows: _JobRows, regime: np.ndarray, in_regime: np.ndarray,
                   avail: np.ndarray, horizon: int) -> tuple[int, np.ndarray]:
    """How many of the next ``horizon`` rounds (at most) are steady for jobs that run with the
    same GPUs and no restart in each: no job finishes or changes regime. Returns the count
    ``f`` and ``in_regime`` before the ``f``-th of them (the last steady round; ``in_regime``
    itself when ``f == 0``).

    In a steady round a job advances by the same ``adv`` epochs, so the progress before round
    ``k`` is ``in_regime`` plus ``adv`` added ``k`` times (`np.cumsum`, sequential: the same
    roundings as stepping); each block of rounds is then checked with `_run_jobs` itself.
    """
    zero = np.zeros_like(avail)
    first = _run_jobs(rows, regime, in_regime, avail, zero)
    if horizon <= 0 or not bool(_steady(first)):
        return 0, in_regime
    adv = first.adv
    s = max(in_regime.size, 1)
    block = max(1, BLOCK_ELEMENTS // (s * max(rows.epochs.shape[1], 1)))
    x = in_regime
    done = 0
    last = in_regime
    while done < horizon:
        b = min(horizon - done, block)
        steps = np.empty((b + 1,) + x.shape)
        steps[0] = x
        steps[1:] = adv
        X = np.cumsum(steps, axis=0)  # X[k]: progress before the k-th round of the block
        ok = _steady(_run_jobs(rows, np.broadcast_to(regime, X[:-1].shape), X[:-1], avail,
                               zero))
        f = int(ok.size if ok.all() else np.argmin(ok))
        if f:
            last = X[f - 1]
        done += f
        if f < b:
            break
        x = X[-1]
    return done, last


def _repeat_add(x0: np.ndarray, inc: np.ndarray | float, count: int) -> np.ndarray:
    """``x0`` with ``inc`` added ``count`` times, rounded after every addition exactly as a
    loop ``x += inc`` would (`np.cumsum` accumulates sequentially)."""
    x = np.array(x0, dtype=float)
    inc = np.broadcast_to(np.asarray(inc, dtype=float), x.shape)
    block = max(1, BLOCK_ELEMENTS // max(x.size, 1))
    done = 0
    while done < count:
        b = min(count - done, block)
        steps = np.empty((b + 1,) + x.shape)
        steps[0] = x
        steps[1:] = inc
        x = np.cumsum(steps, axis=0)[-1]
        done += b
    return x


def _run_jobs_upstream(rows: _JobRows, regime: np.ndarray, in_regime: np.ndarray,
                       done: np.ndarray, iters: np.ndarray, batch: np.ndarray,
                       lead: np.ndarray, duration: float, overhead: np.ndarray) -> _Outcome:
    """One round of the running jobs as the Shockwave artifact's simulator runs it
    (``Simulator(..., mechanics="upstream")``; uw-mad-dash/shockwave scheduler/scheduler.py).

    * a job runs the whole round at the speed of the regime (batch size) it starts it in:
      ``int(throughput * round)`` whole steps, at most its remaining ones (scheduler.py:1425-1466,
      ``_get_num_steps``);
    * a restarting job (``overhead > 0``) whose run is longer than the round less
      `UPSTREAM_SHORT_RUN_SLACK` seconds keeps ``int(steps * (run - overhead) / run)`` of its
      steps; a shorter run loses nothing (scheduler.py:1936-1990);
    * a job changes batch size only at the end of a run: upstream flags the change at a round's
      end when the job's epoch count rounded up reaches the end of its regime
      (``_simulate_accordion`` / ``_simulate_gns`` with ``_get_num_epochs``'s ``ceil``,
      scheduler.py:1604-1727, 2017-2021, 4721-4729; GNS looks one epoch ahead,
      ``bs_gns[current_epoch + 1]``: ``lead`` epochs per job) and applies the flag after the
      job's next run (``_done_callback`` -> ``_scale_bs_and_iters``, scheduler.py:4676-4678),
      rounding its completed epochs up to a whole number (scheduler.py:4900-4925); rounding up
      to its total epochs finishes it. A regime followed by one of the same batch size is left
      without a flag, where its epochs end.

    ``iters`` and ``batch``: the running jobs' iterations per epoch and batch size per regime
    (``(s, R)``); ``lead`` (``(s,)``): epochs the flag looks ahead; every other argument as
    `_run_jobs` (one batch row only).
    """
    s = regime.size
    idx = np.arange(s)
    spe = iters[idx, regime]  # steps per epoch at the round's batch size
    thr = spe / rows.sec_eff[idx, regime]  # steps per second
    remaining = (rows.total - done) * spe
    steps = np.minimum(np.floor(thr * duration), remaining)
    run = steps / thr
    late = (overhead > 0) & (run > duration - UPSTREAM_SHORT_RUN_SLACK)
    with np.errstate(invalid="ignore", divide="ignore"):
        kept = np.floor(steps * (run - overhead) / run)
    steps = np.where(late, kept, steps)
    fin = steps >= remaining - STEP_TOL
    new_done = np.where(fin, rows.total, done + steps / spe)
    ends = np.cumsum(np.where(rows.real, rows.epochs, 0.0), axis=1)  # (s, R)
    last = rows.nreg - 1
    nxt = np.minimum(regime + 1, last)
    differs = (regime < last) & (batch[idx, nxt] != batch[idx, regime])
    # the flag raised at the end of the job's previous round: its epochs rounded up reached
    # the end of its regime
    flagged = differs & (np.ceil(done - _EPOCH_TOL) + lead >= ends[idx, regime] - _EPOCH_TOL)
    passed = np.minimum((ends <= (new_done + _EPOCH_TOL)[:, None]).sum(axis=1), last)
    change = ~fin & flagged
    move = change | (~fin & ~differs & (passed > regime))
    new_done = np.where(change, np.ceil(new_done - _EPOCH_TOL), new_done)
    fin = fin | (new_done >= rows.total - _EPOCH_TOL)
    new_done = np.where(fin, rows.total, new_done)
    at = np.minimum((ends <= (new_done + _EPOCH_TOL)[:, None]).sum(axis=1), last)
    reg = np.where(fin, last, np.where(move, at, regime))
    start = np.take_along_axis(ends, reg[:, None], axis=1)[:, 0] - rows.epochs[idx, reg]
    return _Outcome(fin=fin, moved=reg != regime, roll=np.zeros(s, dtype=bool),
                    adv=steps / spe, run_time=run, counted=run - np.where(late, overhead, 0.0),
                    regime=reg,
                    in_regime=np.where(move | fin, np.maximum(new_done - start, 0.0),
                                       in_regime + steps / spe),
                    epochs_done=new_done)
