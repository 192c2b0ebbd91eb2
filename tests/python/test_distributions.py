"""torch.distributions on kiln: the samplers kiln runs natively (multinomial,
_standard_gamma, _sample_dirichlet, poisson, binomial, the reparameterised
gradients, _assert_async) against the CPU.

Random numbers cannot match the CPU's bit for bit, so samples are checked
statistically: seeded (the conftest seeds every test), so each check is
deterministic, with bounds a wrong sampler fails (a chi-square statistic
above dof + 5 sqrt(2 dof), far in the tail; a Kolmogorov-Smirnov distance
above 1.95 / sqrt(n), the 0.001 level; sample means and variances more than
six standard errors off). Shapes, dtypes and errors are compared with the
CPU exactly, and reproducibility under torch.manual_seed exactly."""
import math
import os

import pytest
import torch
import torch.distributions as D

import torch_kiln

KILN = "kiln"
FLOATS = [torch.float32, torch.float64, torch.bfloat16, torch.float16]


def chi_square(counts, expected):
    counts, expected = counts.double().cpu(), expected.double().cpu()
    keep = expected > 0
    assert counts[~keep].sum() == 0, "a category of probability zero was drawn"
    return float(((counts[keep] - expected[keep]) ** 2 / expected[keep]).sum()), int(keep.sum()) - 1


def assert_fits(counts, expected):
    statistic, dof = chi_square(counts, expected)
    assert statistic < dof + 5 * math.sqrt(2 * dof), (statistic, dof, counts, expected)


def assert_ks(samples, cdf):
    """One-sample Kolmogorov-Smirnov distance of `samples` from `cdf`."""
    x = samples.double().cpu().flatten().sort().values
    n = x.numel()
    theoretical = cdf(x)
    upper = (torch.arange(1, n + 1, dtype=torch.float64) / n - theoretical).max()
    lower = (theoretical - torch.arange(0, n, dtype=torch.float64) / n).max()
    assert max(float(upper), float(lower)) < 1.95 / math.sqrt(n)


def assert_moments(samples, mean, variance, dim=0):
    """Sample mean and variance within six standard errors (the variance's
    standard error taken from the fourth moment of the samples)."""
    x = samples.double().cpu()
    n = x.shape[dim]
    mean = torch.as_tensor(mean, dtype=torch.float64)
    variance = torch.as_tensor(variance, dtype=torch.float64)
    sample_mean = x.mean(dim)
    assert torch.all((sample_mean - mean).abs() <= 6 * (variance / n).sqrt() + 1e-12), (sample_mean, mean)
    centered = x - sample_mean
    fourth = (centered ** 4).mean(dim)
    variance_error = ((fourth - variance ** 2).clamp_min(0) / n).sqrt()
    assert torch.all((centered.pow(2).mean(dim) - variance).abs() <= 6 * variance_error + 1e-9), (
        centered.pow(2).mean(dim), variance)


def no_fallback(function):
    torch_kiln.clear_op_tracking()
    result = function()
    assert not torch_kiln.get_fallback_ops(), torch_kiln.get_fallback_ops()
    return result


def same_error(function, cpu_input, kiln_input):
    with pytest.raises(Exception) as cpu_error:
        function(cpu_input)
    with pytest.raises(type(cpu_error.value)) as kiln_error:
        function(kiln_input)
    assert str(kiln_error.value).split("\n")[0] == str(cpu_error.value).split("\n")[0]


# ---------------------------------------------------------------- multinomial

PROBABILITIES = torch.tensor([[0.1, 0.0, 0.6, 0.3], [2.0, 1.0, 0.0, 1.0]])  # rows need not sum to one


@pytest.mark.parametrize("dtype", FLOATS)
def test_multinomial_with_replacement_frequencies(dtype):
    probabilities = PROBABILITIES.to(dtype)
    samples = no_fallback(lambda: torch.multinomial(probabilities.to(KILN), 20000, replacement=True))
    assert samples.device.type == KILN and samples.dtype == torch.int64 and samples.shape == (2, 20000)
    for row in range(2):
        counts = torch.bincount(samples[row].cpu(), minlength=4)
        expected = probabilities[row].double() / probabilities[row].double().sum() * 20000
        assert_fits(counts, expected)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_multinomial_without_replacement_matches_cpu_distribution(dtype):
    """Ordered pairs drawn without replacement: kiln's frequencies against the
    CPU's (two-sample chi-square) and against the exact probabilities."""
    p = torch.tensor([0.1, 0.0, 0.5, 0.25, 0.15], dtype=dtype)
    rows = 6000
    kiln = no_fallback(lambda: torch.multinomial(p.to(KILN).expand(rows, 5), 2))
    cpu = torch.multinomial(p.expand(rows, 5), 2)
    assert kiln.shape == cpu.shape == (rows, 2) and kiln.dtype == cpu.dtype
    kiln = kiln.cpu()
    assert torch.all(kiln[:, 0] != kiln[:, 1])
    kiln_counts = torch.bincount(kiln[:, 0] * 5 + kiln[:, 1], minlength=25).double()
    cpu_counts = torch.bincount(cpu[:, 0] * 5 + cpu[:, 1], minlength=25).double()
    both = (kiln_counts + cpu_counts) > 0
    statistic = float(((kiln_counts - cpu_counts)[both] ** 2 / (kiln_counts + cpu_counts)[both]).sum())
    dof = int(both.sum()) - 1
    assert statistic < dof + 5 * math.sqrt(2 * dof)
    q = p.double() / p.double().sum()
    exact = torch.zeros(25, dtype=torch.float64)
    for first in range(5):
        for second in range(5):
            if first != second and q[first] > 0:
                exact[first * 5 + second] = q[first] * q[second] / (1 - q[first])
    assert_fits(kiln_counts, exact * rows)


def test_multinomial_without_replacement_takes_every_positive_category():
    p = torch.tensor([[0.0, 3.0, 0.0, 1.0, 2.0]] * 50, device=KILN)
    samples = torch.multinomial(p, 3).cpu()
    assert torch.equal(samples.sort(1).values, torch.tensor([[1, 3, 4]] * 50))


@pytest.mark.parametrize("replacement", [True, False])
def test_multinomial_shapes_and_out(replacement):
    for probabilities, samples in [(torch.rand(7), 3), (torch.rand(4, 7), 5), (torch.rand(1, 3), 1)]:
        cpu = torch.multinomial(probabilities, samples, replacement)
        kiln = no_fallback(lambda: torch.multinomial(probabilities.to(KILN), samples, replacement))
        assert kiln.shape == cpu.shape and kiln.dtype == cpu.dtype and kiln.device.type == KILN
        out = torch.empty(0, dtype=torch.int64, device=KILN)
        torch.multinomial(probabilities.to(KILN), samples, replacement, out=out)
        assert out.shape == cpu.shape
        assert int(out.min()) >= 0 and int(out.max()) < probabilities.shape[-1]
    transposed = torch.rand(6, 3).t()  # non-contiguous rows
    assert torch.multinomial(transposed.to(KILN), 2, replacement).shape == (3, 2)


def test_multinomial_reproducible_under_seed():
    p = torch.rand(3, 10, device=KILN)
    for replacement in (True, False):
        torch.manual_seed(11)
        first = torch.multinomial(p, 6, replacement).cpu()
        torch.manual_seed(11)
        second = torch.multinomial(p, 6, replacement).cpu()
        third = torch.multinomial(p, 6, replacement).cpu()
        assert torch.equal(first, second)
        assert not torch.equal(second, third)
        generator = torch.Generator(device=KILN).manual_seed(3)
        a = torch.multinomial(p, 6, replacement, generator=generator).cpu()
        generator.manual_seed(3)
        assert torch.equal(a, torch.multinomial(p, 6, replacement, generator=generator).cpu())


@pytest.mark.parametrize("replacement", [True, False])
@pytest.mark.parametrize("bad", [
    torch.tensor([0.5, -0.1, 0.6]),
    torch.tensor([0.5, float("inf"), 0.6]),
    torch.tensor([0.5, float("nan"), 0.6]),
    torch.tensor([[0.5, 0.5], [0.0, 0.0]]),
    torch.zeros(3),
])
def test_multinomial_errors_match_cpu(bad, replacement):
    same_error(lambda p: torch.multinomial(p, 2, replacement), bad, bad.to(KILN))


def test_multinomial_argument_errors_match_cpu():
    p = torch.rand(4)
    same_error(lambda t: torch.multinomial(t, 5, False), p, p.to(KILN))
    same_error(lambda t: torch.multinomial(t, 0, True), p, p.to(KILN))
    same_error(lambda t: torch.multinomial(t, 1, True), torch.rand(2, 2, 2), torch.rand(2, 2, 2).to(KILN))
    same_error(lambda t: torch.multinomial(t, 1, True), torch.ones(3, dtype=torch.int64),
               torch.ones(3, dtype=torch.int64).to(KILN))


# ---------------------------------------------------------- gamma and friends

def test_standard_gamma_distribution():
    alphas = torch.tensor([0.1, 0.5, 1.0, 2.5, 10.0], dtype=torch.float64)
    samples = no_fallback(lambda: torch._standard_gamma(alphas.to(KILN).expand(20000, 5)))
    assert samples.dtype == torch.float64 and samples.shape == (20000, 5)
    assert_moments(samples, alphas, alphas)
    for column, alpha in enumerate(alphas):
        assert_ks(samples[:, column], lambda x, a=alpha: torch.special.gammainc(a.expand_as(x), x))


@pytest.mark.parametrize("dtype", FLOATS)
def test_standard_gamma_dtypes(dtype):
    alpha = torch.tensor([0.0, 1e-3, 0.7, 4.0], dtype=dtype)
    samples = no_fallback(lambda: torch._standard_gamma(alpha.to(KILN).expand(4000, 4)))
    assert samples.dtype == dtype
    values = samples.cpu().double()
    # The CPU's clamp: at least the dtype's smallest normal number.
    assert torch.all(values >= torch.finfo(dtype).tiny)
    assert_moments(values[:, 2:], alpha[2:].double(), alpha[2:].double())


def test_standard_gamma_edge_values_match_cpu():
    alpha = torch.tensor([0.0, -1.0, float("nan"), float("inf")])
    assert torch.equal(torch._standard_gamma(alpha.to(KILN)).cpu(), torch._standard_gamma(alpha))
    # As CUDA's ("gamma_cuda"), the message names the device's kernel.
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        torch._standard_gamma(torch.ones(3, dtype=torch.int64, device=KILN))
    assert torch._standard_gamma(torch.ones(0, 3, device=KILN)).shape == (0, 3)


def test_dirichlet_and_beta():
    alpha = torch.tensor([0.5, 2.0, 3.0])
    samples = no_fallback(lambda: torch._sample_dirichlet(alpha.to(KILN).expand(20000, 3)))
    assert samples.shape == (20000, 3) and samples.dtype == torch.float32
    total = alpha.sum()
    mean = alpha / total
    assert torch.allclose(samples.sum(1).cpu(), torch.ones(20000), atol=1e-5)
    assert_moments(samples, mean, mean * (1 - mean) / (total + 1))
    beta = no_fallback(lambda: D.Beta(torch.tensor(2.0, device=KILN), torch.tensor(5.0, device=KILN)).sample((20000,)))
    assert_moments(beta, 2 / 7, 2 * 5 / (49 * 8))
    # Dirichlet with a concentration below one: a float32 sample lies in
    # [smallest normal, largest float below 1], as on the CPU.
    small = torch._sample_dirichlet(torch.full((2000, 4), 0.01, device=KILN)).cpu()
    assert small.min() >= torch.finfo(torch.float32).tiny and small.max() < 1


def test_dirichlet_edge_values_match_cpu():
    for alpha in [torch.tensor([0.0, 0.0]), torch.tensor(2.0), torch.ones(0, 3)]:
        assert torch.equal(torch._sample_dirichlet(alpha.to(KILN)).cpu(), torch._sample_dirichlet(alpha))
    for dtype in (torch.float16, torch.bfloat16, torch.float64):
        samples = torch._sample_dirichlet(torch.tensor([1.0, 2.0, 3.0], dtype=dtype, device=KILN).expand(500, 3))
        assert samples.dtype == dtype
        assert torch.allclose(samples.double().sum(1).cpu(), torch.ones(500, dtype=torch.float64), atol=1e-2)


def test_poisson_distribution():
    rates = torch.tensor([0.0, 0.5, 3.0, 9.5, 10.0, 60.0, 1e4], dtype=torch.float64)
    samples = no_fallback(lambda: torch.poisson(rates.to(KILN).expand(20000, 7))).cpu()
    assert torch.equal(samples, samples.round()) and samples[:, 0].eq(0).all()
    assert_moments(samples[:, 1:], rates[1:], rates[1:])
    for column in (2, 5):  # one per sampler: products of uniforms, transformed rejection
        rate = rates[column]
        support = torch.arange(0, int(rate * 4) + 20, dtype=torch.float64)
        expected = D.Poisson(rate).log_prob(support).exp() * 20000
        counts = torch.bincount(samples[:, column].long(), minlength=support.numel())[:support.numel()]
        keep = expected > 5  # pool the tails
        pooled_counts = torch.cat([counts[keep].double(), (20000 - counts[keep].sum()).double().view(1)])
        pooled_expected = torch.cat([expected[keep], (20000 - expected[keep].sum()).view(1)])
        assert_fits(pooled_counts, pooled_expected)


def test_poisson_errors_match_cpu():
    for bad in (torch.tensor([1.0, -1.0]), torch.tensor([float("nan")])):
        same_error(torch.poisson, bad, bad.to(KILN))
    for dtype in (torch.float16, torch.bfloat16):
        assert torch.poisson(torch.full((5,), 4.0, dtype=dtype, device=KILN)).dtype == dtype


def test_binomial_distribution():
    count = torch.tensor([0.0, 5.0, 20.0, 200.0, 200.0, 50.0])
    prob = torch.tensor([0.5, 0.3, 0.05, 0.4, 0.9, 1.0])
    samples = no_fallback(lambda: torch.binomial(count.to(KILN).expand(20000, 6), prob.to(KILN).expand(20000, 6)))
    samples = samples.cpu()
    assert samples.dtype == torch.float32 and torch.equal(samples, samples.round())
    assert samples.min() >= 0 and torch.all(samples <= count)
    assert torch.equal(samples[:, 5], torch.full((20000,), 50.0)) and samples[:, 0].eq(0).all()
    assert_moments(samples[:, 1:5], count[1:5] * prob[1:5], count[1:5] * prob[1:5] * (1 - prob[1:5]))
    for column in (1, 3):  # inversion and BTRS
        support = torch.arange(0, int(count[column]) + 1, dtype=torch.float64)
        expected = D.Binomial(count[column].double(), prob[column].double()).log_prob(support).exp() * 20000
        counts = torch.bincount(samples[:, column].long(), minlength=support.numel())
        keep = expected > 5
        pooled_counts = torch.cat([counts[keep].double(), (20000 - counts[keep].sum()).double().view(1)])
        pooled_expected = torch.cat([expected[keep], (20000 - expected[keep].sum()).view(1)])
        assert_fits(pooled_counts, pooled_expected)


def test_binomial_broadcasts_as_cpu_and_checks_devices():
    count, prob = torch.tensor([[3.0], [4.0]]), torch.tensor([0.0, 1.0])
    with pytest.warns(UserWarning, match="resized"):  # the CPU's output has count's shape, then resizes
        expected = torch.binomial(count, prob)
    assert torch.equal(torch.binomial(count.to(KILN), prob.to(KILN)).cpu(), expected)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.binomial(count.to(KILN), prob)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch._standard_gamma_grad(prob.to(KILN), prob)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_reparameterised_gradients_match_cpu(dtype):
    alpha = torch.tensor([0.2, 0.9, 1.5, 3.0, 20.0], dtype=dtype)
    x = torch.tensor([0.05, 0.5, 1.0, 2.5, 18.0], dtype=dtype)
    kiln = no_fallback(lambda: torch._standard_gamma_grad(alpha.to(KILN), x.to(KILN)))
    torch.testing.assert_close(kiln.cpu(), torch._standard_gamma_grad(alpha, x))
    fraction, concentration = torch.tensor([0.1, 0.4, 0.7], dtype=dtype), torch.tensor([0.5, 2.0, 4.0], dtype=dtype)
    total = torch.tensor([6.5, 6.5, 6.5], dtype=dtype)
    kiln = no_fallback(lambda: torch._dirichlet_grad(fraction.to(KILN), concentration.to(KILN), total.to(KILN)))
    torch.testing.assert_close(kiln.cpu(), torch._dirichlet_grad(fraction, concentration, total))


def test_rsample_backward_on_kiln():
    concentration = torch.tensor([1.5, 2.0, 0.7], device=KILN, requires_grad=True)
    rate = torch.tensor(2.0, device=KILN, requires_grad=True)

    def step():
        D.Gamma(concentration, rate).rsample((100,)).sum().backward()
        D.Dirichlet(concentration).rsample((100,))[:, 0].sum().backward()

    no_fallback(step)
    assert concentration.grad.device.type == KILN and torch.isfinite(concentration.grad).all()
    assert torch.isfinite(rate.grad).all()


def test_samplers_inside_torch_compile():
    def sample(probabilities, alpha):
        return torch.multinomial(probabilities, 4, True), torch._standard_gamma(alpha), torch.poisson(alpha)

    compiled = torch.compile(sample, backend="kiln")
    probabilities, alpha = torch.rand(3, 5, device=KILN), torch.rand(3, device=KILN) + 1
    torch_kiln.clear_op_tracking()
    draws, gamma, counts = compiled(probabilities, alpha)
    assert not torch_kiln.get_fallback_ops()
    assert draws.shape == (3, 4) and gamma.shape == counts.shape == (3,) and draws.device.type == KILN
    torch._dynamo.reset()


def test_samplers_reproducible_under_seed_and_rng_state():
    alpha = torch.tensor([0.3, 2.0, 7.0], device=KILN).expand(50, 3)
    samplers = [
        lambda: torch._standard_gamma(alpha),
        lambda: torch._sample_dirichlet(alpha),
        lambda: torch.poisson(alpha * 5),
        lambda: torch.binomial(alpha.round() * 10, torch.full_like(alpha, 0.3)),
        lambda: torch.multinomial(alpha, 4, True),
    ]
    for sampler in samplers:
        torch.manual_seed(7)
        first = sampler().cpu()
        state = torch.kiln.get_rng_state()
        second = sampler().cpu()
        torch.kiln.set_rng_state(state)
        assert torch.equal(sampler().cpu(), second)
        torch.manual_seed(7)
        assert torch.equal(sampler().cpu(), first)
        assert not torch.equal(first, second)


# The distributions whose samplers fell back to the CPU before kiln had
# native multinomial, gamma, Dirichlet, Poisson and binomial samplers.
NATIVE_SAMPLER_USERS = {"Beta", "Binomial", "Categorical", "Chi2", "Dirichlet", "FisherSnedecor", "Gamma",
                        "MixtureSameFamily", "Multinomial", "NegativeBinomial", "OneHotCategorical", "Poisson",
                        "StudentT"}


def test_every_distribution_samples_on_kiln_without_fallback():
    """Samples every torch.distributions distribution on kiln (those using the
    native samplers by default; all of them, which compiles some 200 kernels
    on a cold cache, with KILN_DISTRIBUTIONS_ALL=1)."""
    every = os.environ.get("KILN_DISTRIBUTIONS_ALL") == "1"
    def k(*values):
        return torch.tensor(values if len(values) > 1 else values[0], device=KILN)

    probabilities = k(0.2, 0.3, 0.5)
    makers = {
        "Bernoulli": lambda: D.Bernoulli(k(0.3)),
        "Beta": lambda: D.Beta(k(2.0), k(3.0)),
        "Binomial": lambda: D.Binomial(10, k(0.3)),
        "Categorical": lambda: D.Categorical(probabilities),
        "Cauchy": lambda: D.Cauchy(k(0.0), k(1.0)),
        "Chi2": lambda: D.Chi2(k(3.0)),
        "ContinuousBernoulli": lambda: D.ContinuousBernoulli(k(0.3)),
        "Dirichlet": lambda: D.Dirichlet(probabilities),
        "Exponential": lambda: D.Exponential(k(1.0)),
        "FisherSnedecor": lambda: D.FisherSnedecor(k(2.0), k(3.0)),
        "Gamma": lambda: D.Gamma(k(2.0), k(3.0)),
        "GeneralizedPareto": lambda: D.GeneralizedPareto(k(0.0), k(1.0), k(0.2)),
        "Geometric": lambda: D.Geometric(k(0.3)),
        "Gumbel": lambda: D.Gumbel(k(0.0), k(1.0)),
        "HalfCauchy": lambda: D.HalfCauchy(k(1.0)),
        "HalfNormal": lambda: D.HalfNormal(k(1.0)),
        "Kumaraswamy": lambda: D.Kumaraswamy(k(2.0), k(3.0)),
        "Laplace": lambda: D.Laplace(k(0.0), k(1.0)),
        "LKJCholesky": lambda: D.LKJCholesky(3, k(2.0)),
        "LogNormal": lambda: D.LogNormal(k(0.0), k(1.0)),
        "LogisticNormal": lambda: D.LogisticNormal(k(0.0, 0.0), k(1.0, 1.0)),
        "LowRankMultivariateNormal": lambda: D.LowRankMultivariateNormal(
            k(0.0, 0.0), torch.ones(2, 1, device=KILN), k(1.0, 1.0)),
        "MixtureSameFamily": lambda: D.MixtureSameFamily(
            D.Categorical(probabilities), D.Normal(torch.zeros(3, device=KILN), torch.ones(3, device=KILN))),
        "Multinomial": lambda: D.Multinomial(10, probabilities),
        "MultivariateNormal": lambda: D.MultivariateNormal(k(0.0, 0.0), torch.eye(2, device=KILN)),
        "NegativeBinomial": lambda: D.NegativeBinomial(10, k(0.3)),
        "Normal": lambda: D.Normal(k(0.0), k(1.0)),
        "OneHotCategorical": lambda: D.OneHotCategorical(probabilities),
        "Pareto": lambda: D.Pareto(k(1.0), k(1.0)),
        "Poisson": lambda: D.Poisson(k(2.0)),
        "RelaxedBernoulli": lambda: D.RelaxedBernoulli(k(0.5), k(0.3)),
        "RelaxedOneHotCategorical": lambda: D.RelaxedOneHotCategorical(k(0.5), probabilities),
        "StudentT": lambda: D.StudentT(k(2.0)),
        "Uniform": lambda: D.Uniform(k(0.0), k(1.0)),
        "VonMises": lambda: D.VonMises(k(0.0), k(3.0)),
        "Weibull": lambda: D.Weibull(k(1.0), k(1.0)),
        "Wishart": lambda: D.Wishart(k(4.0), covariance_matrix=torch.eye(2, device=KILN)),
    }
    torch_kiln.clear_op_tracking()
    sampled = set()
    for name, make in makers.items():
        if not every and name not in NATIVE_SAMPLER_USERS:
            continue
        distribution = make()
        assert type(distribution).__name__ == name
        sample = distribution.sample((3,))
        assert sample.device.type == KILN, name
        if every:
            distribution.log_prob(sample)
        sampled.add(name)
    assert NATIVE_SAMPLER_USERS <= sampled
    assert not torch_kiln.get_fallback_ops(), torch_kiln.get_fallback_ops()
