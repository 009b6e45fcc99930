"""The catalog of remedies: what the field knows works, each with why it helps.

Rules name remedies by id, most likely first; the doctor (``%gpuguard doctor``) uses the same
catalog. Steps are templates: ``{fact}`` fields are filled from the diagnosis, and a ``<<...>>``
part is dropped when its fact is unknown (see :func:`.facts.fill`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from .builds import major_minor
from .facts import fill
from .model import FactValue, Remedy

_RESTART = "Needs a kernel restart: TensorFlow has already initialised the GPU in this kernel."

NVIDIA_DRIVERS = "https://www.nvidia.com/Download/index.aspx"
AMD_DRIVERS = "https://www.amd.com/en/support/download/drivers.html"
INTEL_DRIVERS = "https://www.intel.com/content/www/us/en/download-center/home.html"
TF_BUILDS = "https://www.tensorflow.org/install/source#gpu"
TF_PIP = "https://www.tensorflow.org/install/pip"

#: The step that sends a person to ``%gpuguard doctor``, which the doctor itself leaves out.
SEE_DOCTOR = "%gpuguard doctor checks all of this."
#: What to do when steps come near the GPU's own timeout (TDR), most effective first.
STEP_TIMEOUT_REMEDIES = ("smaller_work", "tcc_mode", "tdr_registry")

_CATALOG = (
    Remedy(
        "free_memory",
        "Free {memory_of} memory",
        "A failed cell's traceback keeps its tensors alive; clearing its frames, IPython's "
        "last-error references and the Keras session gives that memory back to the allocator.",
        steps=("Delete large objects you no longer need (del model, del x_train), then run this.",),
        action="free_memory",
    ),
    Remedy(
        "smaller_batch",
        "Use a smaller batch size",
        "Activation memory grows with the batch: halving the batch roughly halves it.",
        steps=(
            "Lower batch_size in the cell<< (a batch {fit_fraction} should fit)>> and run it again.",
        ),
        action="retry",
    ),
    Remedy(
        "mixed_precision",
        "Train in mixed precision",
        "float16 activations take half the memory of float32, and tensor cores run them faster.",
        steps=(
            'keras.mixed_precision.set_global_policy("mixed_float16") before building the model;',
            'keep the last layer in float32: Dense(..., dtype="float32") or Activation("softmax", dtype="float32").',
        ),
    ),
    Remedy(
        "gradient_accumulation",
        "Keep the effective batch with gradient accumulation",
        "A smaller batch changes the optimisation; accumulating gradients over k steps keeps it.",
        steps=(
            "Divide the batch by k and pass gradient_accumulation_steps=k to the optimizer "
            "(Keras 3: keras.optimizers.Adam(..., gradient_accumulation_steps=k)).",
        ),
    ),
    Remedy(
        "memory_growth",
        "Let TensorFlow take GPU memory as it needs it",
        "By default TensorFlow reserves almost the whole GPU at start, leaving nothing to cuDNN, "
        "cuBLAS or other processes; with memory growth it takes only what it uses.",
        steps=(
            "Run first, before anything touches the GPU: for gpu in tf.config.list_physical_devices('GPU'): "
            "tf.config.experimental.set_memory_growth(gpu, True)",
            "or set the environment variable TF_FORCE_GPU_ALLOW_GROWTH=true before the kernel starts.",
        ),
    ),
    Remedy(
        "cuda_malloc_async",
        "Use CUDA's asynchronous allocator",
        "cuda_malloc_async fragments less than TensorFlow's BFC allocator and returns memory "
        "between steps, so a model near the limit often fits.",
        steps=(
            "Set TF_GPU_ALLOCATOR=cuda_malloc_async before TensorFlow starts "
            "(%env TF_GPU_ALLOCATOR=cuda_malloc_async in the first cell, or in the kernel's environment).",
        ),
    ),
    Remedy(
        "stale_process",
        "Stop the other process holding the GPU",
        "Memory held by another process (often a forgotten notebook kernel) is not available "
        "to this one.",
        steps=(
            "nvidia-smi lists the processes on each GPU and their memory<<; {other_processes}>>.",
            "Shut down kernels you no longer need (JupyterLab: Running Terminals and Kernels), "
            "or end the process: kill <pid>.",
        ),
    ),
    Remedy(
        "xla_off",
        "Compare without XLA",
        "XLA compiles the whole step and may keep larger temporary buffers alive at once.",
        steps=(
            "Compile the model with jit_compile=False and run the cell again.",
            "JAX: XLA_PYTHON_CLIENT_PREALLOCATE=false or XLA_PYTHON_CLIENT_MEM_FRACTION=.7 "
            "before JAX starts.",
        ),
    ),
    Remedy(
        "expandable_segments",
        "Reduce PyTorch's fragmentation",
        "When much memory is reserved but unallocated, expandable segments let PyTorch reuse it.",
        steps=("Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True before PyTorch starts.",),
    ),
    Remedy(
        "host_memory",
        "Keep less in the machine's memory",
        "The operating system's out-of-memory killer ends the largest process, with no error to "
        "show: the kernel holds the data, the models and the batches in host memory.",
        steps=(
            "Load the data in batches (tf.data, a generator, keras.utils.PyDataset) instead of "
            "whole NumPy arrays.",
            "Free what earlier cells keep (del big arrays, models; gc.collect()) before training.",
            "Lower the batch size or the shuffle/prefetch buffers: each holds batches in host "
            "memory.",
        ),
    ),
    Remedy(
        "kernel_log",
        "Read what the kernel left",
        "A process that ends without a Python exception crashed in native code (a driver, a "
        "library), called os._exit, or got a signal from outside.",
        steps=(
            "Look at the server's log: the kernel's last lines of output go there.",
            "Run the cell again under %%gpuguard: the state it records may tell more.",
        ),
    ),
    Remedy(
        "restart_kernel",
        "Restart the kernel",
        "After a GPU error the framework's GPU context is unusable: every later GPU call in "
        "this kernel fails.",
        steps=("Kernel > Restart Kernel, then run the notebook up to this cell again.",),
    ),
    Remedy(
        "smaller_work",
        "Give the GPU shorter pieces of work",
        "The display driver's own timeout (Windows TDR, or CUDA's run-time limit on a GPU that "
        "drives a display; not the guard's stall watchdog) resets a GPU whose single kernel "
        "runs too long: a smaller batch or smaller tensors (image size, sequence length) make "
        "each kernel shorter.",
        steps=("Halve batch_size or the input size and run again.",),
        action="retry",
    ),
    Remedy(
        "check_input_pipeline",
        "Check the input pipeline",
        "A training loop whose GPU is idle while it makes no progress waits for data: a "
        "generator blocked on a file, a network call, a queue or a lock.",
        steps=(
            "Call next() on the generator (or take(1) of the dataset) alone, outside fit, to see "
            "whether it returns;",
            "with workers or multiprocessing, try one worker, and put timeouts on queue.get() "
            "and lock.acquire().",
        ),
    ),
    Remedy(
        "update_driver",
        "Update the framework and the GPU driver",
        "Timeouts and device removals are often driver bugs fixed in later releases.",
        steps=(
            "pip install --upgrade tensorflow (or tensorflow-directml-plugin, torch, jax).",
            "Install the newest driver from your GPU's vendor.",
        ),
        links=(
            ("NVIDIA drivers", NVIDIA_DRIVERS),
            ("AMD drivers", AMD_DRIVERS),
            ("Intel drivers", INTEL_DRIVERS),
        ),
    ),
    Remedy(
        "hide_integrated_gpu",
        "Train on the discrete GPU only",
        "A small integrated GPU picked up as a device times out on work a discrete one finishes.",
        steps=(
            "List the adapters, then set DML_VISIBLE_DEVICES (DirectML) or CUDA_VISIBLE_DEVICES "
            "(CUDA) to the discrete GPU's index before the framework starts.",
        ),
    ),
    Remedy(
        "tcc_mode",
        "Switch the GPU to TCC mode (Windows)",
        "Under TCC the display driver's watchdog does not apply. Only for GPUs that support TCC "
        "(most data-centre and workstation cards) and drive no display.",
        steps=("As administrator: nvidia-smi -i <<{device_index}>> -dm 1, then reboot.",),
    ),
    Remedy(
        "tdr_registry",
        "Lengthen the Windows GPU timeout (advanced)",
        "TdrDelay sets how many seconds a GPU may be busy before Windows resets it (default 2). "
        "Risk: a GPU that really hangs freezes the display for that long; TdrLevel=0 turns "
        "recovery off, and a hang then needs a hard reboot.",
        steps=(
            r"As administrator, under HKLM\System\CurrentControlSet\Control\GraphicsDrivers create "
            "the DWORD TdrDelay (seconds, for example 10), and reboot.",
            "Leave TdrLevel alone unless you accept hard reboots; delete the values to undo.",
        ),
    ),
    Remedy(
        "locate_fault",
        "Find the kernel that faulted",
        "GPU errors are reported at a later call than the one that caused them; synchronous "
        "launches make the traceback point at the culprit.",
        steps=(
            "Restart the kernel with CUDA_LAUNCH_BLOCKING=1 and run again;",
            "TensorFlow: tf.debugging.enable_check_numerics(); PyTorch: compute-sanitizer python script.py.",
        ),
    ),
    Remedy(
        "check_labels",
        "Check the labels and indices",
        "A device-side assert is most often an index out of range: a label of n classes must be "
        "in 0..n-1, an embedding index below the vocabulary size.",
        steps=("Check min and max of the labels against the number of classes, on the CPU.",),
    ),
    Remedy(
        "check_hardware",
        "Check the GPU's health",
        "ECC errors and Xid events are reported by the hardware or the driver, not by your code.",
        steps=(
            "nvidia-smi -q -d ECC,PAGE_RETIREMENT; dmesg | grep -i xid (Linux) for the Xid meaning.",
            "Repeated uncorrectable errors or Xid 48, 63, 64, 79: reboot, then ask for the GPU to "
            "be checked or replaced.",
        ),
    ),
    Remedy(
        "install_matching_libraries",
        "Install the CUDA and cuDNN that TensorFlow was built for",
        "TensorFlow loads CUDA libraries at run time and needs the versions it was compiled with "
        "(cuDNN: the same major version, an equal or newer minor).",
        steps=(
            "<<TensorFlow {tensorflow_version} was built with CUDA {build_cuda} and cuDNN {build_cudnn}. >>"
            "On Linux, pip install 'tensorflow[and-cuda]<<=={tensorflow_version}>>' installs matching "
            "libraries into the environment.",
            "Remove other CUDA/cuDNN copies that come first on LD_LIBRARY_PATH (or PATH on Windows), "
            "then restart the kernel.",
        ),
        links=(("TensorFlow's tested build configurations", TF_BUILDS),),
    ),
    Remedy(
        "install_gpu_tensorflow",
        "Install TensorFlow's GPU build",
        "A CPU-only TensorFlow (tensorflow-cpu, any TensorFlow after 2.10 on native Windows, "
        "TensorFlow on macOS without tensorflow-metal) never uses the GPU, however well the "
        "driver and CUDA are set up.",
        steps=(
            "Linux and WSL2: pip uninstall -y tensorflow-cpu tensorflow-gpu, then pip install "
            "'tensorflow[and-cuda]<<=={tensorflow_version}>>' (it brings matching CUDA and "
            "cuDNN), and restart the kernel.",
            "Native Windows: 2.10 was TensorFlow's last GPU release there; use WSL2, or "
            "tensorflow-cpu with tensorflow-directml-plugin.",
            "macOS: pip install tensorflow-metal.",
        ),
        links=(("Install TensorFlow with pip", TF_PIP),),
    ),
    Remedy(
        "install_gpu_tensorflow_before_2_14",
        "Install TensorFlow's GPU build",
        "A CPU-only TensorFlow never uses the GPU. Before 2.14, TensorFlow's GPU build brings no "
        "CUDA of its own (pip has no tensorflow[and-cuda] for it): it needs the CUDA and cuDNN "
        "it was built with.",
        steps=(
            "Linux and WSL2: pip uninstall -y tensorflow-cpu, then pip install "
            "'tensorflow<<=={tensorflow_version}>>' (before 2.14 the tensorflow package is the "
            "GPU build), with<< CUDA {build_cuda} and cuDNN {build_cudnn}>> the CUDA and cuDNN "
            "of its tested build (conda install -c conda-forge cudatoolkit cudnn); or upgrade to "
            "TensorFlow 2.14 or later, whose 'tensorflow[and-cuda]' brings them.",
            "Native Windows: TensorFlow 2.10 was the last GPU release there: pip install "
            "'tensorflow==2.10.1' with CUDA 11.2 and cuDNN 8.1 (conda install -c conda-forge "
            "cudatoolkit=11.2 cudnn=8.1.0); or keep tensorflow-cpu and add "
            "tensorflow-directml-plugin.",
            "macOS: pip install tensorflow-metal.",
        ),
        links=(("TensorFlow's tested build configurations", TF_BUILDS),),
    ),
    Remedy(
        "install_matching_libraries_before_2_14",
        "Install the CUDA and cuDNN that TensorFlow was built for",
        "TensorFlow loads CUDA libraries at run time and needs the versions it was compiled with "
        "(cuDNN: the same major version, an equal or newer minor); before 2.14, pip has no "
        "tensorflow[and-cuda] to bring them.",
        steps=(
            "<<TensorFlow {tensorflow_version} was built with CUDA {build_cuda} and cuDNN "
            "{build_cudnn}: >>install those, for example conda install -c conda-forge"
            "<< cudatoolkit={build_cuda} cudnn={build_cudnn}>>, or NVIDIA's installers.",
            "Remove other CUDA/cuDNN copies that come first on LD_LIBRARY_PATH (or PATH on Windows), "
            "then restart the kernel.",
        ),
        links=(("TensorFlow's tested build configurations", TF_BUILDS),),
    ),
    Remedy(
        "keep_directml_tensorflow",
        "Keep the TensorFlow that DirectML runs on",
        "tensorflow-directml-plugin gives GPUs to tensorflow-cpu 2.10 and to no other "
        "TensorFlow: uninstalling it, or installing another TensorFlow beside it, takes the GPU "
        "away.",
        steps=(
            "pip uninstall -y tensorflow tensorflow-gpu, then pip install --force-reinstall "
            "'tensorflow-cpu==2.10.0' 'numpy<2' and restart the kernel; keep "
            "tensorflow-directml-plugin.",
        ),
    ),
    Remedy(
        "numpy_1_for_tensorflow",
        "Install the NumPy 1 that TensorFlow was built for",
        "TensorFlow before 2.18 was compiled against NumPy 1, and NumPy 2 changed the binary "
        "interface that compiled modules use: import tensorflow fails.",
        steps=(
            "pip install 'numpy<2', then restart the kernel.",
            "Or upgrade to TensorFlow 2.18 or later, built for NumPy 2 (not where a GPU needs 2.10: "
            "native Windows, DirectML).",
        ),
    ),
    Remedy(
        "update_driver_for_cuda",
        "Update the NVIDIA driver",
        "Each CUDA version needs a minimum driver; an older driver cannot run a newer CUDA "
        "runtime.",
        steps=(
            "<<CUDA {build_cuda} needs driver {min_driver} or newer. >>Install a current driver, "
            "then restart the kernel.",
        ),
        links=(("NVIDIA drivers", NVIDIA_DRIVERS),),
    ),
    Remedy(
        "match_gpu_architecture",
        "Use a build that supports this GPU",
        "The installed framework has no code compiled for this GPU's architecture (too new or too "
        "old for it).",
        steps=(
            "Upgrade the framework (newer GPUs) or install an older release (older GPUs); check the "
            "supported compute capabilities in its release notes.",
        ),
    ),
    Remedy(
        "ptx_toolchain",
        "Match the PTX compiler to the driver",
        "XLA compiles kernels with ptxas; a ptxas newer than the driver, or none at all, fails.",
        steps=(
            "pip install nvidia-cuda-nvcc-cu12 (matching TensorFlow's CUDA), or update the driver;",
            "or point XLA at a CUDA install: XLA_FLAGS=--xla_gpu_cuda_data_dir=/usr/local/cuda.",
        ),
    ),
    Remedy(
        "check_gpu_visible",
        "Make the GPU visible",
        "The framework found no usable GPU: no driver, a CPU-only build, or CUDA_VISIBLE_DEVICES "
        "hiding it.",
        steps=(
            "nvidia-smi should list the GPU; if it does not, install the driver.",
            "tf.config.list_physical_devices('GPU') should list it; if not, install "
            "tensorflow[and-cuda] (Linux) and check CUDA_VISIBLE_DEVICES<< (now {cuda_visible_devices})>>.",
            SEE_DOCTOR,
        ),
    ),
    Remedy(
        "allow_cpu",
        "Let the cell run without a GPU",
        "A cell that pins /GPU:0 fails where there is none; soft placement runs it on the CPU.",
        steps=(
            "Remove with tf.device('/GPU:0'), or call tf.config.set_soft_device_placement(True).",
        ),
    ),
    Remedy(
        "check_shapes",
        "Check the shapes of the data against the model",
        "The model received a tensor of another shape than it was built for; the GPU is not "
        "involved.",
        steps=(
            "Print x.shape, y.shape and model.input_shape / model.output_shape.",
            "Class indices as labels need sparse_categorical_crossentropy; one-hot labels need "
            "categorical_crossentropy.",
        ),
    ),
    Remedy(
        "cast_dtype",
        "Cast the data to the model's dtype",
        "NumPy creates float64 by default; Keras layers compute in float32.",
        steps=('x = x.astype("float32") (NumPy) or tf.cast(x, tf.float32).',),
    ),
    Remedy(
        "numeric_array",
        "Make the array numeric",
        "An array of dtype object holds Python values of mixed types or lengths (a DataFrame "
        "column of strings, ragged lists); TensorFlow needs one numeric dtype.",
        steps=(
            'x = np.asarray(x).astype("float32"), or df.to_numpy(dtype="float32") for a DataFrame;',
            "a column that will not convert holds text or missing values: encode or drop it;",
            "ragged rows: pad them (keras.utils.pad_sequences) or use tf.ragged.constant.",
        ),
    ),
    Remedy(
        "pad_batches",
        "Give the elements of a batch one shape",
        "A batch is one tensor, so every element in it needs the same shape.",
        steps=(
            "Resize in the pipeline: ds.map(lambda x, y: (tf.image.resize(x, (224, 224)), y));",
            "or pad: ds.padded_batch(batch_size) for sequences of different lengths;",
            "or keep them ragged: ds.ragged_batch(batch_size).",
        ),
    ),
    Remedy(
        "check_features",
        "Parse the features the records hold",
        "tf.io.parse_example needs every feature it is told about, with the type it was written as.",
        steps=(
            "List what a record holds: tf.train.Example.FromString(next(iter(tf.data.TFRecordDataset(path))).numpy());",
            "match the names and types in your feature description, or give the feature a default_value.",
        ),
    ),
    Remedy(
        "collective_timeout",
        "Find the rank that did not reach the collective",
        "A collective waits for every rank: one rank that crashed, ran a different number of "
        "steps or took a different branch leaves the others waiting until the timeout.",
        steps=(
            "Run with NCCL_DEBUG=INFO and TORCH_NCCL_ASYNC_ERROR_HANDLING=1 and read the first rank that failed;",
            "make every rank see the same number of batches (drop_last=True, DistributedSampler);",
            "for a slow step that is not stuck, raise the timeout: init_process_group(timeout=timedelta(hours=1)).",
        ),
    ),
    Remedy(
        "reload_driver",
        "Bring the driver's parts back to one version",
        "After a driver update the old kernel module stays loaded until it is unloaded or the "
        "machine reboots; in a container, the driver library comes from the host.",
        steps=(
            "Reboot the machine (or unload the nvidia modules: sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia);",
            "in a container, start it with the NVIDIA Container Toolkit (--gpus all) rather than installing a driver in it;",
            "nvidia-smi works again when the versions match.",
        ),
        links=(
            (
                "NVIDIA Container Toolkit",
                "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html",
            ),
        ),
    ),
    Remedy(
        "match_plugin_version",
        "Install the framework version the plugin was built for",
        "Pluggable devices (DirectML, Metal, PJRT plugins) load only into the framework version "
        "they were built against.",
        steps=(
            "tensorflow-directml-plugin: pip install tensorflow-cpu==2.10.0 (the plugin stops at 2.10);",
            "tensorflow-metal: install the tensorflow-macos/tensorflow version its release notes name;",
            'JAX: install jax and its jax-cuda plugin at the same version (pip install -U "jax[cuda12]").',
        ),
    ),
    Remedy(
        "install_gpu_pytorch",
        "Install PyTorch's CUDA build",
        "PyTorch's CPU-only wheels (the default on Windows and macOS, and any +cpu build) have no "
        "CUDA kernels, however well the driver is set up.",
        steps=(
            "pip uninstall -y torch, then install the CUDA wheel that the selector on "
            "pytorch.org names for your driver, e.g. pip install torch --index-url "
            "https://download.pytorch.org/whl/cu124, and restart the kernel.",
            "torch.cuda.is_available() should then say True; torch.version.cuda names its CUDA.",
        ),
        links=(("Install PyTorch", "https://pytorch.org/get-started/locally/"),),
    ),
    Remedy(
        "install_gpu_jax",
        "Install JAX's CUDA plugin",
        "JAX runs on the CPU unless its CUDA plugin loads: it needs the plugin at JAX's own "
        "version, a driver new enough for its CUDA, and a visible GPU.",
        steps=(
            'pip install -U "jax[cuda12]" (Linux; it brings CUDA and cuDNN), then restart the kernel.',
            "jax.devices() should then list CudaDevice entries; set JAX_PLATFORMS=cuda to make a "
            "failure to load it an error instead of a quiet fallback.",
        ),
        links=(("Install JAX", "https://docs.jax.dev/en/latest/installation.html"),),
    ),
    Remedy(
        "mps_macos",
        "Use a Mac and PyTorch that have MPS",
        "PyTorch's MPS backend runs on Apple silicon (or an AMD GPU) with a recent macOS, and "
        "only in a PyTorch built with it.",
        steps=(
            "Update macOS (the error names the version it needs; sw_vers shows yours).",
            "torch.backends.mps.is_built() and is_available() should both say True; otherwise "
            "install PyTorch's macOS arm64 wheel in a native (not Rosetta) Python.",
        ),
        links=(("Accelerated PyTorch on Mac", "https://developer.apple.com/metal/pytorch/"),),
    ),
    Remedy(
        "container_gpu_runtime",
        "Give the container the GPU",
        "A container sees a GPU only through the NVIDIA Container Toolkit, which needs a loaded "
        "driver on the host.",
        steps=(
            "On the host: nvidia-smi must work; install the NVIDIA Container Toolkit and restart "
            "Docker.",
            "Start the container with --gpus all (Docker) or a GPU resource request (Kubernetes).",
        ),
        links=(
            (
                "NVIDIA Container Toolkit",
                "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html",
            ),
        ),
    ),
    Remedy(
        "convert_input",
        "Give fit data it can batch",
        "Keras reads NumPy arrays, tensors, a tf.data.Dataset, a keras.utils.PyDataset, a "
        "generator or a PyTorch DataLoader; a Python list of arrays or of numbers is none of them.",
        steps=(
            "Convert lists: x = np.asarray(x, dtype='float32'), y = np.asarray(y) (ragged lists "
            "need padding first).",
            "Check what fit receives: print(type(x), getattr(x, 'shape', None)).",
        ),
    ),
)

REMEDIES: dict[str, Remedy] = {remedy.id: remedy for remedy in _CATALOG}

#: Remedies about GPU memory settings and GPU sharing: left out when the failure was on the CPU.
GPU_ONLY_REMEDIES = frozenset(
    {"memory_growth", "cuda_malloc_async", "stale_process", "expandable_segments", "tcc_mode"}
)

#: Remedies that only work in a process where TensorFlow has not yet initialised the GPU.
NEEDS_FRESH_PROCESS = frozenset({"memory_growth", "cuda_malloc_async", "expandable_segments"})
RESTART_NOTE = _RESTART


def resolved(
    remedy_id: str, fields: Mapping[str, FactValue], gpu_initialised: bool | None
) -> Remedy:
    """The catalog's remedy with its steps filled from ``fields``.

    A remedy that needs a fresh process gets a note: a restart when TensorFlow has initialised
    the GPU here (``gpu_initialised``), a reminder when that is unknown.
    """
    remedy = REMEDIES[for_this_stack(remedy_id, fields)]
    note = remedy.note
    if remedy_id in NEEDS_FRESH_PROCESS and gpu_initialised is not False:
        note = (
            RESTART_NOTE
            if gpu_initialised
            else "Takes effect only in a fresh kernel, before TensorFlow initialises the GPU."
        )
    return replace(
        remedy,
        title=fill(remedy.title, fields),
        steps=tuple(fill(step, fields) for step in remedy.steps),
        note=note,
    )


#: Remedies whose steps install ``tensorflow[and-cuda]``, an extra TensorFlow has from 2.14 on,
#: and what to advise instead for an older release.
_BEFORE_AND_CUDA = {
    "install_gpu_tensorflow": "install_gpu_tensorflow_before_2_14",
    "install_matching_libraries": "install_matching_libraries_before_2_14",
}
AND_CUDA_SINCE = (2, 14)


def for_this_stack(remedy_id: str, fields: Mapping[str, FactValue]) -> str:
    """The remedy that fits the installed TensorFlow: with tensorflow-directml-plugin
    (``directml_plugin``), never one that removes the tensorflow-cpu it runs on; before 2.14,
    never ``tensorflow[and-cuda]``, which does not exist there."""
    if remedy_id == "install_gpu_tensorflow" and "directml_plugin" in fields:
        return "keep_directml_tensorflow"
    version = fields.get("tensorflow_version")
    release = major_minor(version) if isinstance(version, str) else None
    if remedy_id in _BEFORE_AND_CUDA and release is not None and release < AND_CUDA_SINCE:
        return _BEFORE_AND_CUDA[remedy_id]
    return remedy_id
