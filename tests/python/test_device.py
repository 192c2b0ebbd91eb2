"""The kiln device as PyTorch sees it: registration, autoload, torch.kiln and
torch.accelerator, device selection and the errors around it."""
import pytest
import torch

from conftest import run_python


def test_privateuse1_is_named_kiln_and_is_the_accelerator():
    assert torch._C._get_privateuse1_backend_name() == "kiln"
    assert torch.accelerator.is_available()
    assert torch.accelerator.current_accelerator() == torch.device("kiln")
    assert torch.kiln.is_available()
    assert torch.kiln.device_count() == torch.accelerator.device_count() >= 1


def test_import_torch_autoloads_kiln():
    result = run_python("""
        import sys, torch
        assert "torch_kiln" in sys.modules
        print(torch.ones(1, device="kiln").device)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "kiln:0"


def test_autoload_can_be_disabled_and_import_torch_kiln_works():
    result = run_python("""
        import sys, torch
        assert "torch_kiln" not in sys.modules
        assert torch._C._get_privateuse1_backend_name() == "privateuseone"
        import torch_kiln
        print(torch.ones(1, device="kiln").device)
    """, TORCH_DEVICE_BACKEND_AUTOLOAD=0)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "kiln:0"


def test_import_torch_kiln_first_works():
    result = run_python("""
        import torch_kiln, torch
        print(torch.zeros(2).kiln().device)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "kiln:0"


def test_generated_methods():
    tensor = torch.ones(3).kiln()
    assert tensor.is_kiln and tensor.device.type == "kiln"
    assert not torch.ones(1).is_kiln
    module = torch.nn.Linear(2, 2).kiln()
    assert module.weight.device.type == "kiln"
    storage = torch.arange(4, dtype=torch.float32).untyped_storage().kiln()
    assert storage.device.type == "kiln"
    assert torch.equal(torch.tensor([], device="kiln").set_(storage).cpu(), torch.arange(4.0))


def test_device_module_api():
    assert torch.kiln.current_device() == 0
    properties = torch.kiln.get_device_properties(0)
    assert properties.total_memory > 0 and properties.multi_processor_count >= 1
    assert "Kiln" in torch.kiln.get_device_name()
    assert torch.kiln.get_amp_supported_dtype() == [torch.float16, torch.bfloat16, torch.float32]
    assert torch.kiln.is_bf16_supported()
    assert torch.kiln.is_initialized()
    torch.kiln.synchronize()


def test_device_agnostic_code_picks_kiln():
    device = torch.accelerator.current_accelerator()
    x = torch.arange(4.0, device=device)
    assert x.device == torch.device("kiln:0")
    torch.accelerator.synchronize()
    assert torch.accelerator.current_device_index() == 0
    assert torch.accelerator.memory_allocated() >= 0


def test_device_index_out_of_range_names_the_valid_range():
    with pytest.raises(RuntimeError, match=r"kiln device index 7 is out of range.*0\.\.0"):
        torch.empty(1, device="kiln:7")
    with pytest.raises(RuntimeError, match="out of range"):
        torch.kiln.set_device(7)


def test_tensors_on_different_devices_in_one_op():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.ones(2, device="kiln") + torch.ones(2)


def test_two_devices():
    result = run_python("""
        import torch
        assert torch.kiln.device_count() == 2
        a = torch.arange(4.0, device="kiln:1")
        with torch.kiln.device(1):
            assert torch.kiln.current_device() == 1
            b = torch.ones(4, device="kiln")
        assert torch.kiln.current_device() == 0
        assert b.device == torch.device("kiln:1")
        c = a.to("kiln:0")
        assert torch.equal(c.cpu(), torch.arange(4.0))
        torch.kiln.set_device(1)
        assert torch.empty(1, device="kiln").device.index == 1
        try:
            a + torch.ones(4, device="kiln:0")
        except RuntimeError as error:
            assert "kiln:1 and kiln:0" in str(error) or "kiln:0 and kiln:1" in str(error)
        else:
            raise AssertionError("mixing kiln:0 and kiln:1 must fail")
        print("ok")
    """, KILN_NUM_DEVICES=2)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_fork_after_init_is_refused_in_the_child():
    result = run_python("""
        import os, torch
        torch.ones(1, device="kiln")  # initializes the runtime (and its stream workers)
        pid = os.fork()
        if pid == 0:
            try:
                torch.ones(1, device="kiln")
            except RuntimeError as error:
                os._exit(3 if "forked subprocess" in str(error) else 4)
            os._exit(5)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "3"


def test_fork_before_init_is_fine():
    result = run_python("""
        import os, torch
        assert torch.kiln.device_count() == 1   # counting does not initialize
        pid = os.fork()
        if pid == 0:
            os._exit(0 if torch.ones(2, device="kiln").sum().item() == 2 else 1)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "0"


def test_quantized_dtypes_are_refused():
    with pytest.raises(TypeError, match="kiln does not support quantized dtypes"):
        torch.empty(2, dtype=torch.qint8, device="kiln")
    quantized = torch.quantize_per_tensor(torch.ones(2), 0.1, 0, torch.qint8)
    with pytest.raises(TypeError, match="kiln does not support quantized dtypes"):
        quantized.to("kiln")


def test_autocast_on_kiln_matches_cpu_policy():
    x = torch.randn(4, 8)
    weight = torch.randn(3, 8)
    with torch.autocast("kiln", dtype=torch.bfloat16):
        on_device = torch.nn.functional.linear(x.to("kiln"), weight.to("kiln"))
        summed = on_device.float().softmax(dim=-1)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        on_cpu = torch.nn.functional.linear(x, weight)
    assert on_device.dtype == on_cpu.dtype == torch.bfloat16
    assert summed.dtype == torch.float32
    torch.testing.assert_close(on_device.cpu(), on_cpu)


def test_module_to_keeps_parameters_and_tied_weights():
    # As with CUDA, Module.to() moves a parameter in place (param.data = ...),
    # so the Parameter objects, and weights tied between modules, survive.
    embedding = torch.nn.Embedding(10, 4)
    head = torch.nn.Linear(4, 10, bias=False)
    head.weight = embedding.weight
    model = torch.nn.Sequential(embedding, head)
    original = embedding.weight
    model.to("kiln")
    assert embedding.weight is original and head.weight is embedding.weight
    assert original.device.type == "kiln"
    model(torch.tensor([1, 2], device="kiln")).sum().backward()
    assert head.weight.grad is embedding.weight.grad
    model.to("cpu")
    assert head.weight is embedding.weight and original.device.type == "cpu"
    assert original.grad.device.type == "cpu"
    assert torch._has_compatible_shallow_copy_type(torch.ones(1), torch.ones(1, device="kiln"))
    assert not torch._has_compatible_shallow_copy_type(torch.ones(1, device="kiln"),
                                                       torch.ones(1).to_sparse())
