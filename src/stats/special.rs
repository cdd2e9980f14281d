//! Distribution functions the tests need, each accurate to about 1e-12
//! relative in the ranges used here (checked against SciPy in
//! tests/stats/reference.rs).

use statrs::function::beta::beta_reg;
use statrs::function::erf::erfc;
use statrs::function::gamma::ln_gamma;
use std::f64::consts::{PI, SQRT_2};

/// Standard normal CDF, Phi(z).
pub fn normal_cdf(z: f64) -> f64 {
    0.5 * erfc(-z / SQRT_2)
}

/// Standard normal upper tail, 1 - Phi(z), accurate far into the tail.
pub fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / SQRT_2)
}

/// Standard normal density.
fn normal_pdf(z: f64) -> f64 {
    (-0.5 * z * z).exp() / (2.0 * PI).sqrt()
}

/// Standard normal quantile, Phi^-1(p) (scipy.special.ndtri). Starts from
/// statrs' erfc_inv and polishes with Newton steps on the CDF.
pub fn normal_quantile(p: f64) -> f64 {
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    let mut z = -SQRT_2 * statrs::function::erf::erfc_inv(2.0 * p);
    for _ in 0..3 {
        // Work in the tail nearer to z for relative accuracy.
        let err = if z < 0.0 {
            normal_cdf(z) - p
        } else {
            (1.0 - p) - normal_sf(z)
        };
        let d = normal_pdf(z);
        if d == 0.0 {
            break;
        }
        z -= err / d;
    }
    z
}

/// Student t CDF with `df` degrees of freedom (df > 0).
pub fn t_cdf(t: f64, df: f64) -> f64 {
    if t.is_infinite() {
        return if t > 0.0 { 1.0 } else { 0.0 };
    }
    // P(|T| > |t|) = I_x(df/2, 1/2) with x = df / (df + t^2).
    let x = df / (df + t * t);
    let tail = 0.5 * beta_reg(df / 2.0, 0.5, x);
    if t > 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// The t quantile for the normal quantile `z` at `df` degrees of freedom,
/// to the fourth order in 1/df (Abramowitz and Stegun 26.7.5). Assumes a
/// large `df`: the series diverges for small ones.
fn cornish_fisher_t(z: f64, df: f64) -> f64 {
    let z2 = z * z;
    let g1 = z * (z2 + 1.0) / 4.0;
    let g2 = z * ((5.0 * z2 + 16.0) * z2 + 3.0) / 96.0;
    let g3 = z * (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) / 384.0;
    let g4 = z * ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) / 92160.0;
    z + (g1 + (g2 + (g3 + g4 / df) / df) / df) / df
}

fn t_pdf(t: f64, df: f64) -> f64 {
    let ln = ln_gamma((df + 1.0) / 2.0)
        - ln_gamma(df / 2.0)
        - 0.5 * (df * PI).ln()
        - (df + 1.0) / 2.0 * (1.0 + t * t / df).ln();
    ln.exp()
}

/// Degrees of freedom from which [`t_quantile`] starts from the
/// Cornish-Fisher expansion rather than statrs' inverse incomplete beta,
/// which at df/2 in the millions can take minutes (at df 1.5e7, p 0.75
/// it never returned: `report --trim` hung on a metric whose runs
/// straddle zero). From 1e4 on, the expansion is within 3e-16 of the
/// quantile for p from 0.6 to 1 - 1e-12 (checked against mpmath and
/// SciPy over df 1e4 to 1e9; at 1e3 it is 2.7e-11 off at 1 - 1e-12);
/// and Newton steps on [`t_cdf`] there would make it worse, as `t_cdf`
/// loses digits at such df (2.5e-8 relative at df 1.5e7).
/// tests/stats/reference.rs checks it against SciPy from 1e4 to 1e9.
const T_QUANTILE_EXPANSION_FROM: f64 = 1e4;

/// Student t quantile (scipy.stats.t.ppf): the inverse incomplete beta
/// gives a start, Newton steps on [`t_cdf`] polish it; from
/// [`T_QUANTILE_EXPANSION_FROM`] degrees of freedom, the Cornish-Fisher
/// expansion around the normal quantile (Abramowitz and Stegun 26.7.5).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    if p == 0.5 {
        return 0.0;
    }
    if df.is_nan() || p.is_nan() {
        // statrs' inverse beta never returns on a NaN.
        return f64::NAN;
    }
    if df >= T_QUANTILE_EXPANSION_FROM {
        // From the smaller tail, which 1 - p does not round.
        let t = cornish_fisher_t(-normal_quantile(p.min(1.0 - p)), df);
        return if p < 0.5 { -t } else { t };
    }
    let tail = p.min(1.0 - p);
    let x = statrs::function::beta::inv_beta_reg(df / 2.0, 0.5, 2.0 * tail);
    let mut t = (df * (1.0 - x) / x).sqrt();
    if p < 0.5 {
        t = -t;
    }
    for _ in 0..4 {
        let err = if t < 0.0 {
            t_cdf(t, df) - p
        } else {
            (1.0 - p) - (1.0 - t_cdf(t, df))
        };
        let d = t_pdf(t, df);
        if d == 0.0 || !err.is_finite() {
            break;
        }
        let step = err / d;
        t -= step;
        if step.abs() <= 1e-15 * t.abs() {
            break;
        }
    }
    t
}

/// CDF of the noncentral t distribution with `df` degrees of freedom and
/// noncentrality `delta` (scipy.stats.nct.cdf), by Lenth's algorithm AS 243
/// (Applied Statistics 38, 1989): a Poisson-weighted series of incomplete
/// beta functions, stopped when its error bound is below 1e-14. Valid for
/// |delta| up to about 37 (beyond, exp(-delta^2/2) underflows); power
/// calculations stay far below that.
pub fn nct_cdf(t: f64, df: f64, delta: f64) -> f64 {
    let (tt, del, negative) = if t >= 0.0 {
        (t, delta, false)
    } else {
        (-t, -delta, true)
    };
    let mut result = 0.0;
    let x = tt * tt / (tt * tt + df);
    if x > 0.0 {
        let lambda = del * del;
        let mut p = 0.5 * (-0.5 * lambda).exp();
        let mut q = (2.0 / PI).sqrt() * p * del;
        // s = 1/2 - p, written to keep precision when lambda is small.
        // s = 1/2 - p, the Poisson mass not yet used; expm1 keeps it
        // precise when lambda is small.
        let mut s = -0.5 * (-0.5 * lambda).exp_m1();
        let mut a = 0.5;
        let b = 0.5 * df;
        let rxb = (1.0 - x).powf(b);
        let albeta = 0.5 * PI.ln() + ln_gamma(b) - ln_gamma(0.5 + b);
        let mut xodd = beta_reg(a, b, x);
        let mut godd = 2.0 * rxb * (a * x.ln() - albeta).exp();
        let mut xeven = 1.0 - rxb;
        let mut geven = b * x * rxb;
        result = p * xodd + q * xeven;
        let mut en = 1.0;
        loop {
            a += 1.0;
            xodd -= godd;
            xeven -= geven;
            godd *= x * (a + b - 1.0) / a;
            geven *= x * (a + b - 0.5) / (a + 0.5);
            p *= lambda / (2.0 * en);
            q *= lambda / (2.0 * en + 1.0);
            s -= p;
            en += 1.0;
            result += p * xodd + q * xeven;
            let errbd = 2.0 * s * (xodd - godd);
            if errbd.abs() < 1e-14 || en > 100_000.0 {
                break;
            }
        }
    }
    result += normal_cdf(-del);
    if negative {
        1.0 - result
    } else {
        result
    }
}

/// Upper tail of the F distribution with `d1` and `d2` degrees of freedom,
/// P(F > f) (scipy.stats.f.sf): I_x(d2/2, d1/2) with x = d2 / (d2 + d1 f),
/// the regularized incomplete beta, which keeps small p-values precise
/// (1 - CDF would cancel). 1 for f <= 0, 0 for f = infinity.
pub fn f_sf(f: f64, d1: f64, d2: f64) -> f64 {
    if f.is_nan() {
        return f64::NAN;
    }
    if f <= 0.0 {
        return 1.0;
    }
    if f.is_infinite() {
        return 0.0;
    }
    beta_reg(d2 / 2.0, d1 / 2.0, d2 / (d2 + d1 * f))
}
