from __future__ import annotations

from ipy_gpuguard.telemetry.visible_devices import PhysicalDevice, select_visible

GPUS = [
    PhysicalDevice(0, "GPU-aaaa-1111"),
    PhysicalDevice(1, "GPU-bbbb-2222"),
    PhysicalDevice(2, "GPU-abcd-3333"),
]
MIGS = [
    PhysicalDevice(
        1,
        "MIG-0001",
        mig_index=0,
        parent_uuid="GPU-bbbb-2222",
        gpu_instance_id=1,
        compute_instance_id=0,
    ),
    PhysicalDevice(
        1,
        "MIG-0002",
        mig_index=1,
        parent_uuid="GPU-bbbb-2222",
        gpu_instance_id=2,
        compute_instance_id=0,
    ),
]


def uuids(value):
    return [device.uuid for device in select_visible(GPUS, MIGS, value)]


def test_unset_means_every_gpu_in_nvml_order():
    assert uuids(None) == [gpu.uuid for gpu in GPUS]


def test_empty_hides_everything():
    assert uuids("") == []


def test_indices_reorder():
    assert uuids("2,0") == ["GPU-abcd-3333", "GPU-aaaa-1111"]


def test_list_ends_at_first_entry_that_names_no_device():
    assert uuids("1,7,0") == ["GPU-bbbb-2222"]
    assert uuids("-1,0") == []


def test_uuid_prefix_must_be_unique():
    assert uuids("GPU-b") == ["GPU-bbbb-2222"]
    assert uuids("GPU-a") == []  # matches two GPUs: CUDA treats it as invalid


def test_mig_uuid_and_legacy_mig_form():
    assert uuids("MIG-0002") == ["MIG-0002"]
    assert uuids("MIG-GPU-bbbb-2222/1/0") == ["MIG-0001"]
    assert uuids("MIG-GPU-bbbb-2222/9/0") == []


def test_whitespace_and_duplicates_are_tolerated():
    assert uuids(" 1 , 1 ") == ["GPU-bbbb-2222"]
