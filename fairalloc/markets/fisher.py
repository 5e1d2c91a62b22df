"""Fisher markets: the composable builder `fairalloc.FisherMarket` (normalisation,
edge form, solve paths, cvxpy composition); the numerics live in `fairalloc.markets.engine`, the
result type in `fairalloc.markets.result`, the one-call functions
`fairalloc.fisher_market` and
`fairalloc.volatile_fisher_market` in `fairalloc.markets.functions`.

Shockwave (§4.1, App. C-D) defines the *volatile Fisher market*: resources bought
in round ``t`` are consumed in round ``t``, buyer ``i`` has budget ``B_i`` for the whole window,
and its utility is ``U_i = sum_t u_it(x_it)`` with per-round linear or Leontief ``u_it``. The
equilibrium is the optimum of the Eisenberg-Gale program

    maximise  sum_i B_i log U_i   s.t.  sum_i x_ijt <= s_jt,  x >= 0,

and the prices are the multipliers of the supply constraints. The static market is ``T = 1``.
Every market is solved and certified on its edge form by the Eisenberg-Gale engine
(`fairalloc.markets.engine`), which documents the dual certificate.

Three exact methods solve it (``method=``):

* ``"fast"`` (linear only): proportional-response dynamics to rough prices, then an exact conic
  solve restricted to each buyer's near-best edges, re-adding every edge the full-market
  certificate shows to be violated until the certified gap meets ``gap_tol``;
* ``"conic"``: the whole edge-form program, handed to Clarabel as sparse conic data;
* ``"cvxpy"``: the program as a cvxpy model (the composable builder
  `fairalloc.FisherMarket`; constraints and objective terms can be added), solved by
  Clarabel (named explicitly);
* ``"dual"`` (static Leontief only): a primal-dual interior-point method on the smooth dual in
  the ``m`` prices (`fairalloc.markets.leontief`), polished by projected Newton and certified
  on the whole market; it hands over to ``"conic"`` when it does not certify.

``"auto"`` picks ``"cvxpy"`` for composed models, ``"fast"`` for linear markets with more than
2,000 edges, ``"dual"`` for static Leontief markets with more than 2,000 buyers, and
``"conic"`` otherwise.

Before any of them, buyers with identical utility rows are merged (exact symmetry reduction,
`fairalloc.markets.symmetry`; ``symmetry=False`` turns it off): the path the result reports
then starts with ``"symmetry:<classes>"`` and ``stats.classes`` counts the classes. Buyers whose
rows agree only up to a relative 1e-8 are tried as one class before that
(``"near-symmetry:<classes>"``), kept only when the expansion certifies on the original market.

Units: every market is first normalised by exact powers of two (budgets to mean ~1, each good's
supply to ~1, each buyer's utility row to largest entry ~1), solved and certified there, and
mapped back (``x = f_s x'``, ``p = f_b p' / f_s``); the certificate's gap is judged against the
total budget (``Certificate.scale``), so results and verdicts do not depend on the units of
budgets, supply or utilities (see ``formulations/eisenberg_gale.md``).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._compose import Composable
from .._validation import (
    as_array,
    as_labels,
    as_option,
    as_positive_int,
    as_time_limit,
    as_tolerance,
)
from ..errors import FairallocError, InputError, SolverError
from ..plan import Decline, Strategy, run_plan
from ..results import Certificate, SolveStats, Status
from ..tolerances import FEAS_TOL, GAP_TOL
from .engine import (
    EdgeForm,
    EngineLog,
    edge_starts,
)
from .plain import CVXPY_STEP, PlainContext, plain_plan
from .result import MarketResult
from .strategies import MarketPoint, run_market_plan
from .symmetry import (
    Solved,
    SymmetryContext,
    buyer_classes,
    near_buyer_classes,
    solve_symmetric,
    uses_classes,
)
from .tuning import Tuning, as_tuning
from .units import market_units

__all__ = ["FisherMarket"]

MARKET_KINDS = ("linear", "leontief")  # utility forms (``kind=``)
MARKET_METHODS = ("auto", "fast", "conic", "cvxpy", "dual")  # solution paths (``method=``)
FAST_MIN_EDGES = 2000  # PERFORMANCE: "auto" takes the fast path above this many edges


# --------------------------------------------------------------------------------------------
# the builder
# --------------------------------------------------------------------------------------------
class FisherMarket(Composable):
    """Composable builder of an Eisenberg-Gale market (static or volatile, linear or Leontief).

    Parameters
    ----------
    utility : array_like, shape (n, m) or (n, m, T)
        Linear: ``utility[i, j(, t)]`` is buyer ``i``'s utility per unit of good ``j`` (in
        round ``t``). Leontief: the demand vector, ``u_i = min_{j: a_ij > 0} x_ij / a_ij``.
        A 3-d array makes a volatile market over ``T`` rounds (Shockwave App. C).
    budget : array_like, shape (n,), optional
        Positive budgets (default ones).
    supply : array_like, shape (m,) or (m, T), optional
        Non-negative supply of each good (in each round); default ones.
    kind : {"linear", "leontief"}
    ids : sequence of hashable, optional
        The buyers' ids (unique, one per row of ``utility``); default ``0..n-1``.
    goods : sequence of hashable, optional
        The goods' names (unique, e.g. GPU types); default ``0..m-1``. Results carry both and
        label their tables with them.

    Attributes
    ----------
    x : cvxpy.Expression, shape (n, m) or (n, m*T)
        The allocation (round ``t`` of good ``j`` is column ``j*T + t``; see
        `fairalloc.markets.FisherMarket.column`).
    utility_expr : cvxpy.Expression, shape (n,)
        Each buyer's utility ``U_i``.
    supply_constraint : cvxpy.Constraint
        ``sum_i x_i <= supply``; its dual values are the prices.

    Examples
    --------
    Require buyer 0 to take some of good 1 and re-solve (the constraint binds, so the composed
    program is solved by cvxpy and certified by the conic KKT certificate):

    >>> import numpy as np
    >>> m = FisherMarket([[2.0, 1.0], [1.0, 2.0]])
    >>> m = m.add_constraint(m.x[0, 1] >= 0.25)
    >>> r = m.solve()
    >>> bool(r.allocation[0, 1] >= 0.25 - 1e-7), r.certificate.kind
    (True, 'conic')

    A cap that the plain equilibrium already meets does not move it; the exact equilibrium is
    returned with the Eisenberg-Gale certificate:

    >>> m = FisherMarket([[2.0, 1.0], [1.0, 2.0]])
    >>> r = m.add_constraint(m.x[0, 1] <= 0.1).solve()
    >>> bool(r.allocation[0, 1] <= 0.1), r.certificate.kind
    (True, 'eisenberg_gale')
    """

    def __init__(self, utility: Any, budget: Any = None, supply: Any = None, *,
                 kind: str = "linear", ids: Any = None, goods: Any = None) -> None:
        self.kind = as_option(kind, "kind", MARKET_KINDS)
        U = as_array(utility, "utility", ndim=(2, 3))
        self.volatile = U.ndim == 3
        n, m = U.shape[:2]
        T = U.shape[2] if self.volatile else 1
        self.n, self.m, self.T = n, m, T
        self.ids = as_labels(ids, "ids", n, "buyers")
        self.goods = as_labels(goods, "goods", m, "goods")
        self.utility = U
        self.budget = (np.ones(n) if budget is None
                       else as_array(budget, "budget", ndim=1, shape=(n,), positive=True))
        sup_shape = (m, T) if self.volatile else (m,)
        if supply is None:
            self.supply = np.ones(sup_shape)
        else:
            self.supply = as_array(supply, "supply", ndim=len(sup_shape), shape=sup_shape)
        if not (self.supply > 0).any():
            raise InputError("supply is all zero: there is nothing to allocate",
                             argument="supply")
        self._normalise()
        self._form = self._edge_form()
        self._init_composition()
        self._cvx: dict[str, Any] | None = None

    # --- unit normalisation ---------------------------------------------------------------
    def _normalise(self) -> None:
        """Factors that bring the market to unit scale (`fairalloc.markets.units`)."""
        self._units = market_units(self.utility, self.budget, self.supply, self.kind)

    def _user_certificate(self, cert: Certificate) -> Certificate:
        """A certificate of the normalised program, in the caller's units (``relative_gap``
        and the residuals are unchanged: they are ratios of quantities in the same units)."""
        fb, shift = self._units.fb, self._units.shift
        return Certificate(
            kind=cert.kind, primal_value=fb * (cert.primal_value + shift),
            dual_bound=fb * (cert.dual_bound + shift), gap=fb * cert.gap,
            primal_residual=cert.primal_residual, dual_residual=cert.dual_residual,
            gap_tol=cert.gap_tol, feas_tol=cert.feas_tol,
            scale=None if cert.scale is None else fb * cert.scale)

    def _user_prices(self, p_norm: np.ndarray) -> np.ndarray:
        return np.asarray(p_norm, dtype=float) * self._units.fb / self._units.fs

    # --- edge form ------------------------------------------------------------------------
    def _edge_form(self, user_units: bool = False) -> EdgeForm:
        """The edge form, normalised (what is solved) or in the caller's units."""
        n, m, T = self.n, self.m, self.T
        # column j*T + t
        U = self.utility.reshape(n, m * T) if user_units else self._units.u_norm
        s = self.supply.reshape(m * T)
        if self.kind == "linear":
            valued = U > 0  # (an entry below 1e-308 of its row's largest counts as 0)
            usable = valued & (s > 0)[None, :]
            owner, res = np.nonzero(usable)
            weight = U[owner, res]
            C = sp.csc_matrix((np.ones(owner.size), (res, np.arange(owner.size))),
                              shape=(m * T, owner.size))
        else:
            A3 = U.reshape(n, m, T)
            valued = np.asarray((A3 > 0).any(axis=1))  # (n, T): buyer has demand in round t
            usable = self._usable_rounds()
            owner, rnd = np.nonzero(usable)
            sub = A3[owner, :, rnd]  # (E, m)
            e_idx, j = np.nonzero(sub)
            C = sp.csc_matrix((sub[e_idx, j], (j * T + rnd[e_idx], e_idx)),
                              shape=(m * T, owner.size))
            weight = (np.ones(owner.size) if user_units
                      else self._units.bundle_weights()[owner, rnd])
        values = valued.any(axis=1)
        if not values.all():
            i = int(np.flatnonzero(~values)[0])
            raise InputError(f"utility[{i}] is all zero: buyer {i} values nothing",
                             argument="utility", index=(i,))
        has_edge = np.bincount(owner, minlength=n) > 0
        if not has_edge.all():
            i = int(np.flatnonzero(~has_edge)[0])
            raise InputError(
                f"buyer {i} values only goods with zero supply (utility[{i}] vs supply); "
                "its utility would be 0 and log 0 = -inf",
                argument="supply", index=(i,))
        if user_units:
            return EdgeForm(owner, weight.astype(float), C, self.budget, s.astype(float),
                             edge_starts(owner, n))
        return EdgeForm(owner, weight.astype(float), C, self._units.b_norm,
                         self._units.s_norm.astype(float), edge_starts(owner, n))

    def _allocation(self, z: np.ndarray) -> np.ndarray:
        """The allocation in the caller's units from normalised edge levels ``z``."""
        n, m, T = self.n, self.m, self.T
        form = self._form
        if self.kind == "linear":
            res = form.C.indices
            flat = np.zeros((n, m * T))
            flat[form.owner, res] = z * self._units.fs[res]
        else:
            level = np.zeros((n, T))
            rnd = np.nonzero(self._usable_rounds())[1]
            assert self._units.efac is not None
            level[form.owner, rnd] = z * self._units.efac[form.owner, rnd]
            flat = (self.utility.reshape(n, m, T) * level[:, None, :]).reshape(n, m * T)
        return flat.reshape((n, m, T) if self.volatile else (n, m))

    def _usable_rounds(self) -> np.ndarray:
        """(Leontief) ``[i, t]``: buyer ``i`` has demand in round ``t`` and every resource it
        needs there has positive supply."""
        n, m, T = self.n, self.m, self.T
        A3 = self.utility.reshape(n, m, T)
        blocked = ((A3 > 0) & (self.supply.reshape(1, m, T) <= 0)).any(axis=1)
        return np.asarray((A3 > 0).any(axis=1) & ~blocked)

    def dual_value(self, prices: Any) -> float:
        """The Eisenberg-Gale dual function ``D(p)``: an upper bound on the optimum for any p >= 0.

        Examples
        --------
        >>> FisherMarket([[1.0]]).dual_value([1.0])
        0.0
        """
        p = as_array(prices, "prices", ndim=self.supply.ndim, shape=self.supply.shape)
        with np.errstate(all="ignore"):
            return self._edge_form(user_units=True).dual_value(p.reshape(-1))

    def column(self, good: int, rnd: int = 0) -> int:
        """Column of `x` holding good ``good`` in round ``rnd``.

        Raises
        ------
        InputError
            If ``good`` is not an integer in ``[0, m)`` or ``rnd`` not one in ``[0, T)``.

        Examples
        --------
        >>> import numpy as np
        >>> FisherMarket(np.ones((2, 3, 4))).column(1, 2)   # goods x rounds, row-major
        6
        """
        g = as_positive_int(good, "good", allow_zero=True)
        t = as_positive_int(rnd, "rnd", allow_zero=True)
        if g >= self.m:
            raise InputError(f"good must be in [0, {self.m}), got {good!r}", argument="good")
        if t >= self.T:
            raise InputError(f"rnd must be in [0, {self.T}), got {rnd!r}", argument="rnd")
        return g * self.T + t

    # --- cvxpy composition ----------------------------------------------------------------
    def _build_cvxpy(self) -> dict[str, Any]:
        """The model's cvxpy pieces, built once (added constraints refer to its variables)."""
        if self._cvx is None:
            self._cvx = self._cvxpy_pieces()
        return self._cvx

    def _pieces(self) -> dict[str, Any]:
        """The model's cvxpy pieces for a solve: the built ones, else fresh ones that are not
        kept (``solve`` writes no state on the builder)."""
        return self._cvx if self._cvx is not None else self._cvxpy_pieces()

    def _cvxpy_pieces(self) -> dict[str, Any]:
        """The program's cvxpy pieces. The variables live in normalised units (see
        `_normalise`); `x` and `utility_expr` are expressions in the caller's
        units, so added constraints and terms are written in the caller's units."""
        import cvxpy as cp

        n, m, T = self.n, self.m, self.T
        fs, ufac = self._units.fs, self._units.ufac
        unit_goods = bool(np.all(fs == 1.0))
        unit_util = bool(np.all(ufac == 1.0))
        x: Any
        var: Any
        alloc_n: Any
        if self.kind == "linear":
            var = cp.Variable((n, m * T), nonneg=True, name="x")
            util_n = cp.sum(cp.multiply(self._units.u_norm, var), axis=1)
            alloc_n = var
            x = var if unit_goods else cp.multiply(np.broadcast_to(fs, (n, m * T)), var)
            extra = []
        else:
            var = cp.Variable((n, T), nonneg=True, name="level")
            select = sp.csr_matrix((np.ones(m * T), (np.tile(np.arange(T), m),
                                                     np.arange(m * T))), shape=(T, m * T))
            spread = var @ select
            alloc_n = cp.multiply(self._units.u_norm, spread)
            x = alloc_n if unit_goods else cp.multiply(self._units.u_norm * fs, spread)
            weights = self._units.bundle_weights()
            util_n = cp.sum(var if np.all(weights == 1.0) else cp.multiply(weights, var),
                            axis=1)
            unusable = ~self._usable_rounds()
            extra = [cp.multiply(unusable.astype(float), var) == 0] if unusable.any() else []
        util = util_n if unit_util else cp.multiply(ufac, util_n)
        supply_con = cp.sum(alloc_n, axis=0) <= self._units.s_norm
        return {"x": x, "util": util, "util_n": util_n, "var": var, "supply": supply_con,
                "extra": extra}

    @property
    def x(self) -> Any:
        return self._build_cvxpy()["x"]

    @property
    def utility_expr(self) -> Any:
        return self._build_cvxpy()["util"]

    @property
    def supply_constraint(self) -> Any:
        return self._build_cvxpy()["supply"]

    def add_constraint(self, constraint: Any) -> FisherMarket:
        """Add a cvxpy constraint on `x` / `utility_expr`; returns ``self``.

        Examples
        --------
        >>> m = FisherMarket([[1.0, 1.0], [1.0, 1.0]])
        >>> r = m.add_constraint(m.utility_expr[0] >= 1.5).solve()
        >>> round(float(r.utility[0]), 4)
        1.5
        """
        return super().add_constraint(constraint)

    def add_objective_term(self, term: Any) -> FisherMarket:
        """Add a concave cvxpy expression to the maximised objective; returns ``self``.

        Examples
        --------
        A penalty on buyer 1's use of good 0 moves that good to buyer 0:

        >>> m = FisherMarket([[1.0, 1.0], [1.0, 1.0]])
        >>> r = m.add_objective_term(-10 * m.x[1, 0]).solve()
        >>> round(float(r.allocation[0, 0]), 3)
        1.0
        """
        return super().add_objective_term(term)

    def problem(self) -> Any:
        """The cvxpy problem ``max sum_i B_i log U_i + terms`` s.t. supply and added constraints.

        It is stated in normalised units (see `_normalise`): the objective is
        ``sum_i B'_i log U'_i + terms / fb``, i.e. the caller's objective divided by the budget
        factor ``fb`` and shifted by a constant, so it has the same optimal allocation; the
        supply constraint's dual values are the normalised prices ``p'_r = p_r fs_r / fb``.

        Examples
        --------
        >>> FisherMarket([[1.0, 2.0]]).problem().is_dcp()
        True
        """
        return self._problem(self._build_cvxpy())

    def _problem(self, cvx: dict[str, Any]) -> Any:
        import cvxpy as cp

        objective = cp.sum(cp.multiply(self._units.b_norm, cp.log(cvx["util_n"])))
        for term in self._terms:
            objective = objective + (term if self._units.fb == 1.0 else term / self._units.fb)
        return cp.Problem(cp.Maximize(objective),
                          [cvx["supply"], *cvx["extra"], *self._constraints])

    # --- solve ----------------------------------------------------------------------------
    def solve(
        self,
        *,
        method: str = "auto",
        backend: Any = "clarabel",
        gap_tol: float = GAP_TOL,
        feas_tol: float = FEAS_TOL,
        time_limit: float | None = None,
        warm_start: Any = None,
        symmetry: bool = True,
        tuning: Tuning | None = None,
    ) -> MarketResult:
        """Solve the market and certify the result.

        The market is first normalised to unit scale by powers of two (budgets to mean ~1, each
        good's supply to ~1, each buyer's utility row to largest entry ~1), solved and
        certified there, and mapped back exactly: rescaling budgets by ``a``, supply of good
        ``j`` by ``c_j`` and buyer ``i``'s utilities by ``d_i`` gives the allocation
        ``x_ij c_j``, the prices ``p_j a / c_j`` and the utilities ``U_i d_i`` (Leontief
        demands rescale as ``c_j / d_i``), and the same certificate verdict.

        Parameters
        ----------
        method : {"auto", "fast", "conic", "cvxpy", "dual"}
            See the module docstring. Composed models need ``"cvxpy"`` (``"auto"`` picks it).
            A plain market on which cvxpy fails is solved on the exact ``"conic"`` path.
        backend : str or Backend
            Backend for the exponential-cone programs (it needs the ``"exp_cone"`` capability:
            ``"clarabel"``). The LP polish of linear markets runs on HiGHS. ``stats.backend``
            names the backends that actually ran (e.g. ``"clarabel+highs"``) and
            ``stats.raw_status`` the last conic solve's own status.
        gap_tol : float
            Tolerance on the certified relative gap ``gap / sum(budget)`` (the Eisenberg-Gale
            gap is a sum of budget-weighted terms) or, for a composed model certified by the
            conic KKT certificate, ``gap`` over the magnitude of the program's terms.
        feas_tol : float
            Tolerance on the supply violation relative to each good's supply.
        time_limit : float, optional
            Seconds per conic solve.
        warm_start : array_like, optional
            Prices (shape of ``supply``) to start the fast path from (e.g. a related market's).
        symmetry : bool
            Exact symmetry reduction (default on): buyers whose utility rows (all rounds) are
            identical bit for bit are merged into one buyer with the sum of their budgets (when
            the classes number at most 3/4 of the buyers), the reduced market is solved, each
            class's bundle is split in proportion to budgets and the expanded point is
            certified on the original market (``stats.classes`` is the number of classes,
            ``stats.path`` starts with ``"symmetry:<classes>"``; see
            `fairalloc.markets.symmetry`). Buyers whose rows agree within a relative
            ``tuning.near_tie_share * gap_tol`` (``1e-8`` by default) are tried as one class
            first (``"near-symmetry:<classes>"``), accepted only if the expansion certifies on the
            original market. Composed models are never reduced. ``False`` solves buyer by
            buyer (for testing).
        tuning : fairalloc.markets.Tuning, optional
            The solve plans' performance knobs (default: the measured defaults); no knob
            changes the certified answer.

        Returns
        -------
        MarketResult
            ``status`` is ``OPTIMAL`` (``certificate.ok``), or ``TIME_LIMIT`` when a solve
            stopped at ``time_limit`` (``ITERATION_LIMIT`` at a backend's iteration limit)
            with an exactly feasible allocation whose proven gap misses ``gap_tol``
            (``certificate.ok`` is then false and ``certificate.gap`` says how far from
            optimal it may be).

        Raises
        ------
        CertificateError
            If the certified gap or residual misses its tolerance (other than at a time
            limit, see Returns).
        SolverError
            If a solver fails (any foreign exception is chained as the cause), or stops at
            ``time_limit`` before a feasible point (``status="time_limit"``).

        Notes
        -----
        A composed model without objective terms whose added constraints (on `x` /
        `utility_expr` only) all hold, within ``feas_tol`` relative to their sides, at the
        plain market's equilibrium is solved exactly: that equilibrium is optimal for the
        composed program too (it is optimal on a larger feasible set), and it is returned with
        the exact Eisenberg-Gale certificate (``certificate.kind == "eisenberg_gale"``).
        Otherwise the composed program is solved by cvxpy and certified by the conic KKT
        certificate (``"conic"``).

        Examples
        --------
        >>> r = FisherMarket([[3.0, 1.0], [1.0, 3.0]], budget=[1.0, 3.0]).solve(method="conic")
        >>> r.prices.round(6).tolist(), r.stats.method
        ([1.0, 3.0], 'conic')
        """
        t0 = time.perf_counter()
        method = as_option(method, "method", MARKET_METHODS)
        gap_tol = as_tolerance(gap_tol, "gap_tol")
        feas_tol = as_tolerance(feas_tol, "feas_tol")
        time_limit = as_time_limit(time_limit)
        tuning = as_tuning(tuning)
        log = EngineLog(backend)
        warm = None
        if warm_start is not None:
            warm = as_array(warm_start, "warm_start", ndim=self.supply.ndim,
                            shape=self.supply.shape).reshape(-1) * self._units.fs / self._units.fb
        requested = method
        if method == "auto":
            method = "cvxpy" if self.composed else self._plain_method()
        if self.composed and method != "cvxpy":
            raise InputError(f"method={method!r} cannot solve a model with added constraints or "
                             "terms; use method='cvxpy'", argument="method")
        if method == "fast" and self.kind != "linear":
            raise InputError("method='fast' is for linear markets; use 'conic' or 'cvxpy'",
                             argument="method")
        if method == "dual" and not (self.kind == "leontief" and not self.volatile):
            raise InputError("method='dual' is for static Leontief markets; use 'auto'",
                             argument="method")
        reduce = symmetry and not self.composed
        classes = buyer_classes(self.utility) if reduce else None
        rel = tuning.near_tie_share * gap_tol
        near = (near_buyer_classes(self.utility, rel, exact=classes)
                if reduce and rel > 0 and classes.num_classes > 1 else None)

        def items() -> Solved:
            alloc, prices_n, cert_n, iters, solves = self._solve_items(
                method, gap_tol, feas_tol, time_limit, warm, log, tuning)
            return Solved(alloc, prices_n, cert_n, iters, solves, method, None)

        if classes is not None and uses_classes(classes, near):  # the symmetry plan
            solved = solve_symmetric(SymmetryContext(
                self, classes, requested, gap_tol, feas_tol, time_limit, warm_start, log,
                tuning, items, near))
        else:
            solved = items()
        alloc, prices_n, cert_n = solved.allocation, solved.prices, solved.cert
        iters, solves, method, classes = (solved.iterations, solved.solves, solved.method,
                                          solved.classes)
        cert = self._user_certificate(cert_n)
        status = Status.OPTIMAL
        if not cert.ok:
            if (log.hit_limit and np.isfinite(cert.gap) and np.isfinite(cert.primal_value)
                    and cert.primal_residual <= feas_tol):
                status = log.limit  # a feasible incumbent with its proven gap
            elif log.hit_limit:  # stopped before any feasible point (fuzz seed 8)
                what = (f"the time limit ({time_limit} s)" if log.limit == Status.TIME_LIMIT
                        else "the solver's iteration limit")
                raise SolverError(f"{what} was reached before a feasible point (primal "
                                  f"residual {cert.primal_residual:.3g})",
                                  backend=log.backend, status=log.limit)
            else:
                cert.check(backend=log.backend)
        with np.errstate(all="ignore"):
            prices = self._user_prices(prices_n).reshape(self.supply.shape)
            flat = alloc.reshape(self.n, -1)
            utility = self._utilities(alloc)
            spending = flat @ prices.reshape(-1)
        if not (np.all(np.isfinite(prices)) and np.all(np.isfinite(utility))
                and np.all(np.isfinite(alloc))):
            raise InputError("the equilibrium is not representable in these units (a price, "
                             "utility or allocation exceeds the float range); rescale budget, "
                             "supply or utility", argument="budget")
        stats = SolveStats(backend=log.backend, method=method,
                           seconds=time.perf_counter() - t0, iterations=iters, solves=solves,
                           raw_status=log.raw_status, path=log.path,
                           fallbacks=log.fallbacks,
                           classes=None if classes is None else classes.num_classes)
        return MarketResult(objective=cert.primal_value, status=status, stats=stats,
                            certificate=cert, allocation=alloc, prices=prices, utility=utility,
                            budget=self.budget, spending=spending, ids=self.ids,
                            goods=self.goods)

    def _solve_items(self, method: str, gap_tol: float, feas_tol: float,
                     time_limit: float | None, warm: np.ndarray | None, log: EngineLog,
                     tuning: Tuning) -> tuple[np.ndarray, np.ndarray, Certificate, int, int]:
        """The market solved buyer by buyer (normalised prices and certificate)."""
        try:
            if method == "cvxpy" and self.composed:
                return self._solve_cvxpy(gap_tol, feas_tol, time_limit, log, tuning)
            return self._solve_plain(method, gap_tol, feas_tol, time_limit, warm, log, tuning)
        except FairallocError:
            raise
        except Exception as exc:  # numerical trouble in a polish or a foreign package
            raise SolverError(f"market solve failed: {type(exc).__name__}: {exc}",
                              backend=log.backend, raw_status="exception") from exc

    def _plain_method(self) -> str:
        if self._form.num_edges > FAST_MIN_EDGES:
            if self.kind == "linear":
                return "fast"
            if not self.volatile:
                return "dual"
        return "conic"

    def _solve_plain(self, method: str, gap_tol: float, feas_tol: float,
                     time_limit: float | None, warm: np.ndarray | None, log: EngineLog,
                     tuning: Tuning) -> tuple[np.ndarray, np.ndarray, Certificate, int, int]:
        """The plain market's plan (`fairalloc.markets.plain.plain_plan`, run by the driver)
        on the normalised edge form; allocation in the caller's units, prices and certificate
        normalised."""
        ctx = PlainContext(self._form, gap_tol, feas_tol, time_limit, log, [],
                           linear=self.kind == "linear", tuning=tuning, warm=warm,
                           cvxpy=self._cvxpy_point, incumbent=not self.composed)
        point, iters, solves = run_market_plan(plain_plan(method), ctx)
        return self._allocation(point.z), point.prices, point.cert, iters, solves

    def _cvxpy_point(self, ctx: PlainContext) -> MarketPoint:
        """The plain market solved through its cvxpy model (the plan's ``cvxpy`` step),
        certified on the edge form by the exact Eisenberg-Gale certificate."""
        from .._cvxpy import solve_cvxpy

        cvx = self._pieces()
        try:
            stats, _ = solve_cvxpy(self._problem(cvx), backend=ctx.log.conic,
                                   gap_tol=ctx.gap_tol, feas_tol=ctx.feas_tol,
                                   time_limit=ctx.time_limit, clean=None, robust=False,
                                   log=ctx.log, what="composed market")
        except SolverError as exc:
            raise Decline("the cvxpy solve failed") from exc
        alloc, prices = self._read_solved(cvx, stats)
        return ctx.point(self._edge_levels(alloc), prices, stats.iterations, stats.solves,
                         CVXPY_STEP)

    def _utilities(self, alloc: np.ndarray) -> np.ndarray:
        return self._form.utilities(self._edge_levels(alloc)) * self._units.ufac

    def _constraints_hold(self, alloc: np.ndarray, feas_tol: float) -> bool:
        """Whether every added constraint holds at ``alloc`` (caller's units), within
        ``feas_tol`` relative to the magnitude of its own terms
        (`fairalloc._cvxpy.constraint_residual`); ``False`` when it cannot be decided (a
        constraint involving variables other than the market's)."""
        from .._cvxpy import constraint_residual

        cvx = self._pieces()
        var = cvx["var"]
        if any(v is not var for c in self._constraints for v in c.variables()):
            return False
        z = self._edge_levels(alloc)
        if self.kind == "linear":
            value = np.zeros((self.n, self.m * self.T))
            value[self._form.owner, self._form.C.indices] = z
        else:
            value = np.zeros((self.n, self.T))
            value[self._form.owner, np.nonzero(self._usable_rounds())[1]] = z
        var.save_value(np.maximum(value, 0.0))
        return constraint_residual(self._constraints) <= feas_tol

    def _read_solved(self, cvx: dict[str, Any], stats: Any) -> tuple[np.ndarray, np.ndarray]:
        """(allocation, prices) read off a solved composed model (negative rounding clipped)."""
        dual = cvx["supply"].dual_value
        if dual is None or cvx["x"].value is None:
            raise SolverError("the cvxpy solve returned no allocation or prices",
                              backend=stats.backend, raw_status=stats.raw_status)
        prices = np.maximum(np.asarray(dual, dtype=float).reshape(self.m * self.T), 0.0)
        alloc = np.maximum(np.asarray(cvx["x"].value, dtype=float), 0.0)
        alloc = alloc.reshape((self.n, self.m, self.T) if self.volatile else (self.n, self.m))
        return alloc, prices

    def _clean(self, cvx: dict[str, Any]) -> None:
        """Write the allocation a composed solve returns into the model: negative round-off
        removed, a Leontief buyer's unusable rounds exactly 0."""
        var = cvx["var"]
        if var.value is None:
            return
        value = np.maximum(np.asarray(var.value, dtype=float), 0.0)
        if self.kind != "linear":
            value[~self._usable_rounds()] = 0.0
        var.save_value(value)

    def _solve_cvxpy(self, gap_tol: float, feas_tol: float, time_limit: float | None,
                     log: EngineLog, tuning: Tuning
                     ) -> tuple[np.ndarray, np.ndarray, Certificate, int, int]:
        """A composed model by its plan (`fairalloc.plan.run_plan`): without objective terms,
        the plain equilibrium (step: the plain method's) when every added constraint holds at
        it -- optimal for the composed program too (a larger feasible set), certified by the
        exact Eisenberg-Gale dual -- then the composed program by cvxpy (``cvxpy``, exact).
        When nothing certifies, cvxpy's result is returned as it is (the caller reports it
        after a limit, or raises its certificate's error); its own error is raised."""
        plain = self._plain_method()
        tried: list[tuple[np.ndarray, np.ndarray, Certificate, int, int]] = []
        raised: list[FairallocError] = []

        def plain_solve(_: None) -> tuple[np.ndarray, np.ndarray, Certificate, int, int]:
            out = self._solve_plain(plain, gap_tol, feas_tol, time_limit, None, log, tuning)
            if not out[2].ok:
                raise Decline("the plain equilibrium was not certified")
            if not self._constraints_hold(out[0], feas_tol):
                raise Decline("an added constraint binds at the plain equilibrium")
            log.step("constraints-hold")
            return out

        def composed(_: None) -> tuple[np.ndarray, np.ndarray, Certificate, int, int]:
            try:
                out = self._solve_composed(gap_tol, feas_tol, time_limit, log)
            except FairallocError as exc:
                raised.append(exc)
                raise
            tried.append(out)
            return out

        def certificate(_: None, out: tuple[Any, ...]) -> Certificate:
            return out[2]

        plan = (Strategy(plain, plain_solve, certificate, lambda _: not self._terms),
                Strategy(CVXPY_STEP, composed, certificate, exact=True))
        try:
            return run_plan(plan, None, log, what="composed market",
                            backend=log.conic.name).result
        except FairallocError:
            if tried:
                return tried[-1]
            if raised:
                raise raised[-1]  # noqa: B904 - cvxpy's own error, with its own cause
            raise

    def _solve_composed(self, gap_tol: float, feas_tol: float, time_limit: float | None,
                        log: EngineLog) -> tuple[np.ndarray, np.ndarray, Certificate, int, int]:
        """The composed program by cvxpy's composed plan, certified at the allocation it
        returns (every constraint at its own scale)."""
        from .._cvxpy import solve_cvxpy

        cvx = self._pieces()
        stats, conic_cert = solve_cvxpy(
            self._problem(cvx), backend=log.conic, gap_tol=gap_tol, feas_tol=feas_tol,
            time_limit=time_limit, clean=lambda: self._clean(cvx), robust=True, log=log,
            what="composed market")
        alloc, prices = self._read_solved(cvx, stats)
        return alloc, prices, conic_cert, stats.iterations, stats.solves

    def _edge_levels(self, alloc: np.ndarray) -> np.ndarray:
        """Normalised edge levels of an allocation in the caller's units."""
        n = self.n
        form = self._form
        flat = alloc.reshape(n, -1)
        if self.kind == "linear":
            res = form.C.indices
            return flat[form.owner, res] / self._units.fs[res]
        A3 = self.utility.reshape(n, self.m, self.T)
        X3 = alloc.reshape(n, self.m, self.T)
        with np.errstate(divide="ignore", invalid="ignore"):
            level = np.where(A3 > 0, X3 / A3, np.inf).min(axis=1)
        rnd = np.nonzero(self._usable_rounds())[1]
        assert self._units.efac is not None
        return level[form.owner, rnd] / self._units.efac[form.owner, rnd]

    def __repr__(self) -> str:
        shape = f"{self.n}x{self.m}" + (f"x{self.T}" if self.volatile else "")
        extra = f", {len(self._constraints)} constraints, {len(self._terms)} terms"
        return f"FisherMarket({self.kind}, {shape}{extra if self.composed else ''})"
