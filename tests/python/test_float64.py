"""The float64 policy: native by default, float32 on request (TorchNeuron's)."""
import torch

from conftest import run_python


def test_float64_is_native_by_default():
    tensor = torch.tensor([1.0, 1e-12], dtype=torch.float64).to("kiln")
    assert tensor.dtype == torch.float64
    assert tensor.cpu()[1].item() == 1e-12


def test_float64_policy_float32():
    result = run_python("""
        import warnings, torch, torch_kiln
        assert torch_kiln._C._get_float64_policy() == "float32"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tensor = torch.tensor([1.5, 2.5], dtype=torch.float64).to("kiln")
            other = torch.zeros(3, dtype=torch.float64, device="kiln")
        assert tensor.dtype == torch.float32 and other.dtype == torch.float32
        assert torch.equal(tensor.cpu(), torch.tensor([1.5, 2.5]))
        print(sum("KILN_FLOAT64" in str(w.message) for w in caught))
    """, KILN_FLOAT64="float32")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1"
