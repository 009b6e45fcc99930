"""What the field knows works, each with why it helps, in each stack's own spelling.

One id may have several spellings: for TensorFlow and Keras, PyTorch, JAX, MLX; for NVIDIA,
AMD, Apple and DirectML GPUs; and last, one that names no framework for an error whose stack
is unknown. :func:`.remedies.remedy_for` takes the first spelling that fits the stack, so the
more particular comes first. Steps are templates: ``{fact}`` fields are filled from the
diagnosis, and a ``<<...>>`` part is dropped when its fact is unknown (see :func:`.facts.fill`).
"""

from __future__ import annotations

from .model import Remedy
from .stack import Framework, Vendor

TF_KERAS = frozenset({Framework.TENSORFLOW, Framework.KERAS})
TENSORFLOW = frozenset({Framework.TENSORFLOW})
PYTORCH = frozenset({Framework.PYTORCH})
JAX = frozenset({Framework.JAX})
MLX = frozenset({Framework.MLX})
NVIDIA = frozenset({Vendor.NVIDIA})
AMD = frozenset({Vendor.AMD})
APPLE = frozenset({Vendor.APPLE})
DIRECTML = frozenset({Vendor.DIRECTML})
#: Windows' display-driver timeout (TDR) resets any vendor's GPU but Apple's.
WINDOWS_GPUS = frozenset({Vendor.NVIDIA, Vendor.AMD, Vendor.DIRECTML})

NVIDIA_DRIVERS = "https://www.nvidia.com/Download/index.aspx"
AMD_DRIVERS = "https://www.amd.com/en/support/download/drivers.html"
INTEL_DRIVERS = "https://www.intel.com/content/www/us/en/download-center/home.html"
TF_BUILDS = "https://www.tensorflow.org/install/source#gpu"
TF_PIP = "https://www.tensorflow.org/install/pip"
PYTORCH_INSTALL = "https://pytorch.org/get-started/locally/"
JAX_INSTALL = "https://docs.jax.dev/en/latest/installation.html"
CONTAINER_TOOLKIT = (
    "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html"
)

#: The step that sends a person to ``%gpuguard doctor``, which the doctor itself leaves out.
SEE_DOCTOR = "%gpuguard doctor checks all of this."

_MEMORY_REMEDIES = (
    Remedy(
        "free_memory",
        "Free {memory_of} memory",
        "A failed cell's traceback keeps its tensors alive; clearing its frames, IPython's "
        "last-error references and the framework's caches gives that memory back to the "
        "allocator.",
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
        frameworks=TF_KERAS,
    ),
    Remedy(
        "mixed_precision",
        "Train in mixed precision",
        "16-bit activations take half the memory of float32, and the GPU runs them faster.",
        steps=(
            'Run the forward pass and the loss under with torch.autocast(device_type="{torch_device}", '
            "dtype=torch.bfloat16): (or torch.float16);",
            'with float16, scale the loss: scaler = torch.amp.GradScaler("{torch_device}"), then '
            "scaler.scale(loss).backward(), scaler.step(optimizer), scaler.update().",
        ),
        frameworks=PYTORCH,
    ),
    Remedy(
        "mixed_precision",
        "Compute in bfloat16",
        "bfloat16 activations take half the memory of float32 with float32's range.",
        steps=(
            "Cast the parameters and inputs to jnp.bfloat16 for the forward pass and keep a "
            "float32 copy of the parameters for the update;",
            "in Flax: dtype=jnp.bfloat16, param_dtype=jnp.float32 on the layers.",
        ),
        frameworks=JAX,
    ),
    Remedy(
        "mixed_precision",
        "Compute in bfloat16",
        "bfloat16 weights and activations take half the memory of float32.",
        steps=("model.set_dtype(mx.bfloat16) before training; keep the loss in float32.",),
        frameworks=MLX,
    ),
    Remedy(
        "mixed_precision",
        "Train in mixed precision",
        "16-bit activations take half the memory of float32.",
        steps=(
            "Turn on your framework's mixed precision (float16 or bfloat16 activations, float32 "
            "weights and loss).",
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
        frameworks=TF_KERAS,
    ),
    Remedy(
        "gradient_accumulation",
        "Keep the effective batch with gradient accumulation",
        "A smaller batch changes the optimisation; accumulating gradients over k steps keeps it.",
        steps=(
            "Divide the batch by k; call (loss / k).backward() every step, and "
            "optimizer.step() then optimizer.zero_grad() every k steps.",
        ),
        frameworks=PYTORCH,
    ),
    Remedy(
        "gradient_accumulation",
        "Keep the effective batch with gradient accumulation",
        "A smaller batch changes the optimisation; accumulating gradients over k steps keeps it.",
        steps=(
            "Divide the batch by k and wrap the optimizer: optax.MultiSteps(optimizer, "
            "every_k_schedule=k).",
        ),
        frameworks=JAX,
    ),
    Remedy(
        "gradient_accumulation",
        "Keep the effective batch with gradient accumulation",
        "A smaller batch changes the optimisation; accumulating gradients over k steps keeps it.",
        steps=(
            "Divide the batch by k and add up the gradients of k batches before each update of "
            "the weights.",
        ),
    ),
    Remedy(
        "recompute_activations",
        "Recompute activations instead of keeping them",
        "Gradient checkpointing keeps only some activations for the backward pass and "
        "recomputes the rest: less memory for a third more compute.",
        steps=(
            "Wrap the large blocks of the forward pass in torch.utils.checkpoint.checkpoint(block, "
            "x, use_reentrant=False).",
        ),
        frameworks=PYTORCH,
    ),
    Remedy(
        "recompute_activations",
        "Recompute activations instead of keeping them",
        "Rematerialisation keeps only some activations for the backward pass and recomputes "
        "the rest: less memory for a third more compute.",
        steps=("Wrap the large blocks of the model in jax.checkpoint (flax: nn.remat).",),
        frameworks=JAX,
    ),
    Remedy(
        "memory_growth",
        "Let TensorFlow take GPU memory as it needs it",
        "By default TensorFlow reserves almost the whole GPU at start, leaving nothing to the "
        "GPU's libraries or other processes; with memory growth it takes only what it uses.",
        steps=(
            "Run first, before anything touches the GPU: for gpu in tf.config.list_physical_devices('GPU'): "
            "tf.config.experimental.set_memory_growth(gpu, True)",
            "or set the environment variable TF_FORCE_GPU_ALLOW_GROWTH=true before the kernel starts.",
        ),
        frameworks=TENSORFLOW,
    ),
    Remedy(
        "memory_growth",
        "Let JAX take GPU memory as it needs it",
        "JAX reserves 75% of the GPU when it starts, leaving little to other processes and "
        "libraries; without preallocation it takes only what it uses.",
        steps=(
            "Set XLA_PYTHON_CLIENT_PREALLOCATE=false before JAX starts (%env in the first cell), "
            "or cap it: XLA_PYTHON_CLIENT_MEM_FRACTION=.5.",
        ),
        frameworks=JAX,
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
        frameworks=TENSORFLOW,
        vendors=NVIDIA,
    ),
    Remedy(
        "expandable_segments",
        "Reduce PyTorch's fragmentation",
        "When much memory is reserved but unallocated, expandable segments let PyTorch reuse it.",
        steps=("Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True before PyTorch starts.",),
        frameworks=PYTORCH,
        vendors=NVIDIA,
    ),
    Remedy(
        "expandable_segments",
        "Reduce PyTorch's fragmentation",
        "When much memory is reserved but unallocated, expandable segments let PyTorch reuse it.",
        steps=("Set PYTORCH_HIP_ALLOC_CONF=expandable_segments:True before PyTorch starts.",),
        frameworks=PYTORCH,
        vendors=AMD,
    ),
    Remedy(
        "expandable_segments",
        "Let PyTorch use more of the Mac's memory (with care)",
        "PyTorch stops MPS allocations at a share of the unified memory "
        "(PYTORCH_MPS_HIGH_WATERMARK_RATIO). Risk: raising it, or 0.0 (no limit), lets one "
        "process take memory the system needs, and macOS may swap or freeze.",
        steps=(
            "Set PYTORCH_MPS_HIGH_WATERMARK_RATIO=1.0 (or a little above) before PyTorch starts; "
            "0.0 turns the limit off, at that risk.",
        ),
        frameworks=PYTORCH,
        vendors=APPLE,
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
        vendors=NVIDIA,
    ),
    Remedy(
        "stale_process",
        "Stop the other process holding the GPU",
        "Memory held by another process (often a forgotten notebook kernel) is not available "
        "to this one.",
        steps=(
            "rocm-smi --showpids lists the processes on each GPU and their memory.",
            "Shut down kernels you no longer need (JupyterLab: Running Terminals and Kernels), "
            "or end the process: kill <pid>.",
        ),
        vendors=AMD,
    ),
    Remedy(
        "stale_process",
        "Stop the other programs using the GPU",
        "Memory held by another process (often a forgotten notebook kernel, a game, a browser) "
        "is not available to this one.",
        steps=(
            "Task Manager's Details tab shows each process's dedicated GPU memory (add the column).",
            "Shut down kernels you no longer need (JupyterLab: Running Terminals and Kernels).",
        ),
        vendors=DIRECTML,
    ),
    Remedy(
        "stale_process",
        "Close other programs that use memory",
        "The GPU shares the Mac's unified memory: what other processes hold is not available to "
        "this one.",
        steps=(
            "Activity Monitor's Memory tab shows what each process holds; shut down kernels you "
            "no longer need (JupyterLab: Running Terminals and Kernels).",
        ),
        vendors=APPLE,
    ),
    Remedy(
        "xla_off",
        "Compare without XLA",
        "XLA compiles the whole step and may keep larger temporary buffers alive at once.",
        steps=("Compile the model with jit_compile=False and run the cell again.",),
        frameworks=TF_KERAS,
    ),
    Remedy(
        "host_memory",
        "Keep less in the machine's memory",
        "The operating system's out-of-memory killer ends the largest process, with no error to "
        "show: the kernel holds the data, the models and the batches in host memory.",
        steps=(
            "Load the data in batches (a generator or your framework's data pipeline) instead of "
            "whole arrays.",
            "Free what earlier cells keep (del big arrays, models; gc.collect()) before training.",
            "Lower the batch size or the shuffle/prefetch buffers: each holds batches in host "
            "memory.",
        ),
    ),
)

_HANG_AND_FAULT_REMEDIES = (
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
        vendors=NVIDIA,
    ),
    Remedy(
        "smaller_work",
        "Give the GPU shorter pieces of work",
        "The operating system's GPU timeout (not the guard's stall watchdog) resets a GPU whose "
        "single piece of work runs too long: a smaller batch or smaller tensors (image size, "
        "sequence length) make each piece shorter.",
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
        frameworks=TF_KERAS,
    ),
    Remedy(
        "check_input_pipeline",
        "Check the input pipeline",
        "A training loop whose GPU is idle while it makes no progress waits for data: a "
        "Dataset blocked on a file, a network call, a queue or a lock.",
        steps=(
            "Call next(iter(loader)) alone, outside the loop, to see whether it returns;",
            "try num_workers=0, and put timeouts on queue.get() and lock.acquire().",
        ),
        frameworks=PYTORCH,
    ),
    Remedy(
        "check_input_pipeline",
        "Check the input pipeline",
        "A training loop whose GPU is idle while it makes no progress waits for data: a "
        "generator blocked on a file, a network call, a queue or a lock.",
        steps=(
            "Take one batch from the data alone, outside training, to see whether it returns;",
            "with workers or multiprocessing, try one worker, and put timeouts on queue.get() "
            "and lock.acquire().",
        ),
    ),
    Remedy(
        "update_driver",
        "Update the framework and the GPU driver",
        "Timeouts and device removals are often driver bugs fixed in later releases.",
        steps=("{upgrade_framework}", "Install the newest driver for your GPU."),
        links=(("NVIDIA drivers", NVIDIA_DRIVERS),),
        vendors=NVIDIA,
    ),
    Remedy(
        "update_driver",
        "Update the framework and the GPU driver",
        "Timeouts and device removals are often driver bugs fixed in later releases.",
        steps=("{upgrade_framework}", "Install the newest ROCm release that supports your GPU."),
        links=(("AMD drivers", AMD_DRIVERS),),
        vendors=AMD,
    ),
    Remedy(
        "update_driver",
        "Update the framework and the GPU driver",
        "Timeouts and device removals are often driver bugs fixed in later releases.",
        steps=(
            "{upgrade_framework}",
            "Install the newest driver from the maker of your GPU (Windows Update lags behind).",
        ),
        vendors=DIRECTML,
    ),
    Remedy(
        "update_driver",
        "Update the framework and the system",
        "GPU timeouts and faults are often bugs of the framework's GPU backend or of the system's "
        "GPU driver, fixed in later releases.",
        steps=(
            "{upgrade_framework}",
            "Install the system's updates: its GPU driver comes with it.",
        ),
        vendors=APPLE,
    ),
    Remedy(
        "update_driver",
        "Update the framework and the GPU driver",
        "Timeouts and device removals are often driver bugs fixed in later releases.",
        steps=("{upgrade_framework}", "Install the newest driver from the maker of your GPU."),
    ),
    Remedy(
        "hide_integrated_gpu",
        "Train on the discrete GPU only",
        "A small integrated GPU picked up as a device times out on work a discrete one finishes.",
        steps=(
            "List the adapters, then set DML_VISIBLE_DEVICES to the discrete GPU's index before "
            "the framework starts.",
        ),
        vendors=DIRECTML,
    ),
    Remedy(
        "tcc_mode",
        "Switch the GPU to TCC mode (Windows)",
        "Under TCC the display driver's watchdog does not apply. Only for GPUs that support TCC "
        "(most data-centre and workstation cards) and drive no display.",
        steps=("As administrator: nvidia-smi -i <<{device_index}>> -dm 1, then reboot.",),
        vendors=NVIDIA,
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
        vendors=WINDOWS_GPUS,
    ),
    Remedy(
        "locate_fault",
        "Find the kernel that faulted",
        "GPU errors are reported at a later call than the one that caused them; synchronous "
        "launches make the traceback point at the culprit.",
        steps=(
            "Restart the kernel with CUDA_LAUNCH_BLOCKING=1 and run again;",
            "or run the script under compute-sanitizer python script.py.",
        ),
        frameworks=PYTORCH,
        vendors=NVIDIA,
    ),
    Remedy(
        "locate_fault",
        "Find the kernel that faulted",
        "GPU errors are reported at a later call than the one that caused them; synchronous "
        "launches make the traceback point at the culprit.",
        steps=(
            "Restart the kernel with CUDA_LAUNCH_BLOCKING=1 and run again;",
            "tf.debugging.enable_check_numerics() names the first op that makes NaN or Inf.",
        ),
        frameworks=TENSORFLOW,
        vendors=NVIDIA,
    ),
    Remedy(
        "locate_fault",
        "Find the kernel that faulted",
        "GPU errors are reported at a later call than the one that caused them; synchronous "
        "launches make the traceback point at the culprit.",
        steps=(
            "Restart the kernel with CUDA_LAUNCH_BLOCKING=1 and run again, or run the script "
            "under compute-sanitizer python script.py.",
        ),
        vendors=NVIDIA,
    ),
    Remedy(
        "locate_fault",
        "Find the kernel that faulted",
        "GPU errors are reported at a later call than the one that caused them; synchronous "
        "launches make the traceback point at the culprit.",
        steps=("Restart the kernel with AMD_SERIALIZE_KERNEL=3 and run again.",),
        vendors=AMD,
    ),
    Remedy(
        "locate_fault",
        "Find the operation that faulted",
        "GPU errors are reported at a later call than the one that caused them; the same step "
        "on the CPU raises a Python error at the operation itself.",
        steps=(
            "Run the failing step once on the CPU with the same data: an index or shape error "
            "there names the culprit.",
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
        vendors=NVIDIA,
    ),
    Remedy(
        "check_hardware",
        "Check the GPU's health",
        "Memory errors and GPU resets are reported by the hardware or the driver, not by your "
        "code.",
        steps=(
            "rocm-smi --showrasinfo all; dmesg | grep -i amdgpu for the driver's messages.",
            "Repeated uncorrectable errors or resets: reboot, then ask for the GPU to be checked.",
        ),
        vendors=AMD,
    ),
    Remedy(
        "check_hardware",
        "Check the GPU's health",
        "Faults that come back after a restart, with any program, point to the GPU or its "
        "driver rather than your code.",
        steps=("Reboot; if the fault comes back with other programs too, have the GPU checked.",),
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
        frameworks=PYTORCH,
    ),
    Remedy(
        "collective_timeout",
        "Find the process that did not reach the collective",
        "A collective waits for every process: one that crashed, ran a different number of "
        "steps or took a different branch leaves the others waiting until the timeout.",
        steps=(
            "Read the first process's log that stopped (NCCL_DEBUG=INFO adds the collectives' "
            "own lines);",
            "give every replica the same number of batches (repeat the dataset and set "
            "steps_per_epoch; drop_remainder=True in batch).",
        ),
        frameworks=TF_KERAS,
    ),
    Remedy(
        "collective_timeout",
        "Find the process that did not reach the collective",
        "A collective waits for every process: one that crashed, ran a different number of "
        "steps or compiled a different program leaves the others waiting.",
        steps=(
            "Read the log of the first process that stopped;",
            "make every process run the same steps with the same shapes (a different shape "
            "compiles a different program).",
        ),
        frameworks=JAX,
    ),
    Remedy(
        "collective_timeout",
        "Find the process that did not reach the collective",
        "A collective waits for every process: one that crashed, ran a different number of "
        "steps or took a different branch leaves the others waiting until the timeout.",
        steps=(
            "Read the log of the first process that stopped;",
            "make every process see the same number of batches.",
        ),
    ),
)

_SOFTWARE_REMEDIES = (
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
        frameworks=TENSORFLOW,
        vendors=NVIDIA,
    ),
    Remedy(
        "install_matching_libraries",
        "Use the CUDA libraries that PyTorch brings",
        "PyTorch's CUDA wheels bring their own CUDA and cuDNN; another copy found first (on "
        "LD_LIBRARY_PATH, or installed beside it) is loaded instead and does not match.",
        steps=(
            "Remove other CUDA/cuDNN copies from LD_LIBRARY_PATH (or PATH on Windows), or "
            "reinstall PyTorch with the CUDA wheel that pytorch.org names, then restart the kernel.",
        ),
        links=(("Install PyTorch", PYTORCH_INSTALL),),
        frameworks=PYTORCH,
        vendors=NVIDIA,
    ),
    Remedy(
        "install_matching_libraries",
        "Install the CUDA libraries JAX was built for",
        "JAX's CUDA plugin needs CUDA libraries at least as new as those it was built against.",
        steps=(
            'pip install -U "jax[cuda12]" brings matching CUDA and cuDNN wheels (Linux);',
            "remove older copies that come first on LD_LIBRARY_PATH, then restart the kernel.",
        ),
        links=(("Install JAX", JAX_INSTALL),),
        frameworks=JAX,
        vendors=NVIDIA,
    ),
    Remedy(
        "install_matching_libraries",
        "Install the ROCm libraries the framework was built for",
        "A ROCm build of a framework loads the ROCm libraries of the release it was built for.",
        steps=(
            "Install the framework's wheel for your ROCm release (or the ROCm release its wheel "
            "names), and remove other ROCm copies from LD_LIBRARY_PATH.",
        ),
        vendors=AMD,
    ),
    Remedy(
        "install_matching_libraries",
        "Install the GPU libraries the framework was built for",
        "A framework loads its GPU libraries at run time and needs the versions it was built with.",
        steps=(
            "Install the versions of the GPU libraries your framework's release names (most "
            "frameworks' pip extras bring them), remove other copies that come first on the "
            "library path, then restart the kernel.",
        ),
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
            "Native Windows: 2.10 was TensorFlow's last GPU release there; use WSL2.",
        ),
        links=(("Install TensorFlow with pip", TF_PIP),),
        frameworks=TENSORFLOW,
        vendors=NVIDIA,
    ),
    Remedy(
        "install_gpu_tensorflow",
        "Install tensorflow-metal",
        "TensorFlow on macOS runs on the CPU only; Apple's tensorflow-metal plugin gives it the "
        "GPU.",
        steps=(
            "pip install tensorflow-metal (at the version that matches your TensorFlow in its "
            "release notes), then restart the kernel.",
        ),
        frameworks=TENSORFLOW,
        vendors=APPLE,
    ),
    Remedy(
        "install_gpu_tensorflow",
        "Install TensorFlow's GPU build",
        "A CPU-only TensorFlow never uses the GPU.",
        steps=(
            "AMD on Linux: pip install tensorflow-rocm for your ROCm release, then restart the "
            "kernel.",
        ),
        frameworks=TENSORFLOW,
        vendors=AMD,
    ),
    Remedy(
        "install_gpu_tensorflow",
        "Install TensorFlow's GPU build",
        "A CPU-only TensorFlow (tensorflow-cpu, any TensorFlow after 2.10 on native Windows, "
        "TensorFlow on a Mac without its Metal plugin) never uses the GPU.",
        steps=(
            "Linux and WSL2: pip install 'tensorflow[and-cuda]<<=={tensorflow_version}>>', and "
            "restart the kernel;",
            "a Mac: pip install tensorflow-metal; native Windows: use WSL2.",
        ),
        links=(("Install TensorFlow with pip", TF_PIP),),
        frameworks=TENSORFLOW,
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
            "cudatoolkit=11.2 cudnn=8.1.0).",
        ),
        links=(("TensorFlow's tested build configurations", TF_BUILDS),),
        frameworks=TENSORFLOW,
        vendors=NVIDIA,
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
        frameworks=TENSORFLOW,
        vendors=NVIDIA,
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
        frameworks=TENSORFLOW,
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
        frameworks=TENSORFLOW,
    ),
    Remedy(
        "update_driver_for_cuda",
        "Update the NVIDIA driver, or install a PyTorch for an older CUDA",
        "Each CUDA version needs a minimum driver; PyTorch's wheel brings its CUDA runtime, "
        "which the installed driver is too old to run.",
        steps=(
            "Install a current driver and restart the kernel;",
            "or install the PyTorch wheel built for an older CUDA (the selector on pytorch.org; "
            "torch.version.cuda names the one you have).",
        ),
        links=(("NVIDIA drivers", NVIDIA_DRIVERS), ("Install PyTorch", PYTORCH_INSTALL)),
        frameworks=PYTORCH,
        vendors=NVIDIA,
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
        vendors=NVIDIA,
    ),
    Remedy(
        "match_gpu_architecture",
        "Use a ROCm build that supports this GPU",
        "ROCm ships code only for the GPU architectures (gfx targets) it supports; on another one "
        "every kernel fails to load.",
        steps=(
            "Check your GPU's gfx target (rocminfo | grep gfx) against the supported GPUs of your "
            "ROCm release, and use a release that lists it;",
            "a close unsupported GPU sometimes runs with HSA_OVERRIDE_GFX_VERSION set to a "
            "supported target of the same family (10.3.0 for RDNA2, 11.0.0 for RDNA3); a wrong "
            "value gives invalid ISA errors or faults, so remove it if it does.",
        ),
        vendors=AMD,
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
            "pip install nvidia-cuda-nvcc-cu12 (matching the framework's CUDA), or update the driver;",
            "or point XLA at a CUDA install: XLA_FLAGS=--xla_gpu_cuda_data_dir=/usr/local/cuda.",
        ),
        vendors=NVIDIA,
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
        links=(("NVIDIA Container Toolkit", CONTAINER_TOOLKIT),),
        vendors=NVIDIA,
    ),
    Remedy(
        "reload_driver",
        "Reboot to bring the driver back",
        "A driver that stopped answering (after an update, a suspend, a reset) comes back with "
        "a reboot.",
        steps=("Reboot the machine, then restart the kernel.",),
    ),
    Remedy(
        "match_plugin_version",
        "Install the TensorFlow that the DirectML plugin was built for",
        "tensorflow-directml-plugin loads only into the TensorFlow it was built against.",
        steps=(
            "pip install tensorflow-cpu==2.10.0 (the plugin stops at 2.10), then restart the kernel.",
        ),
        frameworks=TENSORFLOW,
        vendors=DIRECTML,
    ),
    Remedy(
        "match_plugin_version",
        "Install the TensorFlow that tensorflow-metal was built for",
        "tensorflow-metal loads only into the TensorFlow it was built against; with another "
        "one TensorFlow finds no Metal platform.",
        steps=(
            "Install the tensorflow and tensorflow-metal pair its release notes name (pip "
            "install 'tensorflow==X' 'tensorflow-metal==Y'), or pip uninstall tensorflow-metal "
            "to train on the CPU.",
        ),
        frameworks=TENSORFLOW,
        vendors=APPLE,
    ),
    Remedy(
        "match_plugin_version",
        "Install jax and its plugin at one version",
        "JAX's GPU plugins (PJRT) load only into the jax and jaxlib they were built with.",
        steps=(
            "Install jax, jaxlib and the GPU plugin at one version (pip install -U with the "
            "plugin's extra, as JAX's install guide names it for your GPU).",
        ),
        frameworks=JAX,
    ),
    Remedy(
        "match_plugin_version",
        "Install the framework version the plugin was built for",
        "Pluggable devices load only into the framework version they were built against.",
        steps=("Install the framework release the plugin's release notes name.",),
    ),
    Remedy(
        "mps_fallback",
        "Run the missing operation on the CPU",
        "PyTorch can run an operation that MPS lacks on the CPU and the rest on the GPU; newer "
        "releases implement more operations on MPS.",
        steps=(
            "Set PYTORCH_ENABLE_MPS_FALLBACK=1 before PyTorch starts (%env in the first cell), "
            "or move that step to the CPU;",
            "pip install --upgrade torch: MPS gains operations in every release.",
        ),
        frameworks=PYTORCH,
        vendors=APPLE,
    ),
    Remedy(
        "generic_rnn",
        "Build the recurrent layer without its fused kernel",
        "Keras' LSTM and GRU pick a fused kernel that DirectML and the CPU lack when they see "
        "a GPU; the same layer built from its cell runs ordinary ops on any device.",
        steps=(
            "Replace LSTM(units, ...) by RNN(LSTMCell(units), ...) (GRU: GRUCell), or run that "
            "layer under with tf.device('/CPU:0').",
        ),
        frameworks=TF_KERAS,
    ),
)

_NO_GPU_REMEDIES = (
    Remedy(
        "check_gpu_visible",
        "Make the GPU visible",
        "TensorFlow found no usable GPU: no driver, a CPU-only build, or CUDA_VISIBLE_DEVICES "
        "hiding it.",
        steps=(
            "nvidia-smi should list the GPU; if it does not, install the driver.",
            "tf.config.list_physical_devices('GPU') should list it; if not, install "
            "tensorflow[and-cuda] (Linux) and check CUDA_VISIBLE_DEVICES<< (now {cuda_visible_devices})>>.",
            SEE_DOCTOR,
        ),
        frameworks=TENSORFLOW,
        vendors=NVIDIA,
    ),
    Remedy(
        "check_gpu_visible",
        "Make the GPU visible",
        "PyTorch found no usable GPU: no driver, a CPU-only build, or CUDA_VISIBLE_DEVICES "
        "hiding it.",
        steps=(
            "nvidia-smi should list the GPU; if it does not, install the driver.",
            "torch.cuda.is_available() should say True; if not, check that torch.version.cuda "
            "is not None (a CPU-only wheel) and CUDA_VISIBLE_DEVICES<< (now "
            "{cuda_visible_devices})>>.",
            SEE_DOCTOR,
        ),
        frameworks=PYTORCH,
        vendors=NVIDIA,
    ),
    Remedy(
        "check_gpu_visible",
        "Make the GPU visible",
        "JAX found no usable GPU: no CUDA plugin, no driver, or CUDA_VISIBLE_DEVICES hiding it.",
        steps=(
            "nvidia-smi should list the GPU; if it does not, install the driver.",
            "jax.devices() should list CudaDevice entries; if not, install the CUDA plugin "
            '(pip install -U "jax[cuda12]") and check CUDA_VISIBLE_DEVICES<< (now '
            "{cuda_visible_devices})>>.",
            SEE_DOCTOR,
        ),
        frameworks=JAX,
        vendors=NVIDIA,
    ),
    Remedy(
        "check_gpu_visible",
        "Make the GPU visible",
        "The framework found no usable GPU: no driver, a CPU-only build, or a setting hiding it.",
        steps=(
            "nvidia-smi should list the GPU; if it does not, install the driver.",
            "Check CUDA_VISIBLE_DEVICES<< (now {cuda_visible_devices})>> and that the framework "
            "is its GPU build.",
            SEE_DOCTOR,
        ),
        vendors=NVIDIA,
    ),
    Remedy(
        "number_gpus_by_pci_bus",
        "Number the GPUs as the driver does",
        "CUDA numbers the fastest GPU first; the driver, nvidia-smi and ipy_gpuguard number them "
        "by PCI bus. With GPUs of different models, the framework's GPU:0 is then another GPU "
        "than the one the panel, the forecast and --devices read.",
        steps=(
            "Set CUDA_DEVICE_ORDER=PCI_BUS_ID before the framework starts: %env "
            "CUDA_DEVICE_ORDER=PCI_BUS_ID in the notebook's first cell (restart the kernel first "
            "where the framework is already imported), or in the env of the kernel's kernel.json.",
            "Choose GPUs by the driver's numbers after that (CUDA_VISIBLE_DEVICES, --devices).",
        ),
        vendors=NVIDIA,
    ),
    Remedy(
        "check_gpu_visible",
        "Make the AMD GPU visible",
        "The ROCm runtime found no usable GPU: the user cannot open the GPU's device files, the "
        "GPU is not supported by this ROCm, or a setting hides it.",
        steps=(
            "rocm-smi and rocminfo should list the GPU; if not, add the user to the render and "
            "video groups (in a container: --device=/dev/kfd --device=/dev/dri).",
            "Check HIP_VISIBLE_DEVICES and ROCR_VISIBLE_DEVICES, and that the framework is its "
            "ROCm build.",
        ),
        vendors=AMD,
    ),
    Remedy(
        "check_gpu_visible",
        "Make the Mac's GPU visible",
        "On a Mac the GPU is reached through Metal: TensorFlow needs tensorflow-metal, PyTorch "
        "its MPS backend (Apple silicon, a recent macOS, a native arm64 Python).",
        steps=(
            "TensorFlow: pip install tensorflow-metal; PyTorch: torch.backends.mps.is_available() "
            'should say True, with device "mps" rather than "cuda".',
        ),
        frameworks=frozenset({Framework.TENSORFLOW, Framework.KERAS, Framework.PYTORCH}),
        vendors=APPLE,
    ),
    Remedy(
        "check_gpu_visible",
        "Make the GPU visible to DirectML",
        "TensorFlow reaches a GPU through DirectML only with tensorflow-cpu 2.10 and "
        "tensorflow-directml-plugin; DirectML sees the GPUs Windows (or WSL2's /dev/dxg) gives it.",
        steps=(
            "pip install tensorflow-cpu==2.10.0 tensorflow-directml-plugin, then restart the kernel;",
            "check DML_VISIBLE_DEVICES, and update the GPU's driver.",
        ),
        frameworks=TENSORFLOW,
        vendors=DIRECTML,
    ),
    Remedy(
        "check_gpu_visible",
        "Make the GPU visible to DirectML",
        "PyTorch reaches a GPU through DirectML only with torch-directml, on the device it names.",
        steps=(
            "pip install torch-directml, and use device = torch_directml.device();",
            "check DML_VISIBLE_DEVICES, and update the GPU's driver.",
        ),
        frameworks=PYTORCH,
        vendors=DIRECTML,
    ),
    Remedy(
        "check_gpu_visible",
        "Make the GPU visible to DirectML",
        "DirectML sees the GPUs that Windows (or WSL2's /dev/dxg) gives it.",
        steps=("Check DML_VISIBLE_DEVICES, and update the GPU's driver.",),
        vendors=DIRECTML,
    ),
    Remedy(
        "check_gpu_visible",
        "Make the GPU visible",
        "The framework found no usable GPU: no driver, a CPU-only build, or a setting hiding it.",
        steps=(
            "The vendor's tool should list the GPU; if it does not, install the driver.",
            "Check that the framework is its GPU build and that no setting hides the device.",
        ),
    ),
    Remedy(
        "allow_cpu",
        "Let the cell run without a GPU",
        "A cell that pins /GPU:0 fails where there is none; soft placement runs it on the CPU.",
        steps=(
            "Remove with tf.device('/GPU:0'), or call tf.config.set_soft_device_placement(True).",
        ),
        frameworks=TENSORFLOW,
    ),
    Remedy(
        "allow_cpu",
        "Let the cell run without a GPU",
        "A cell that puts tensors on a GPU fails where there is none; choosing the device at run "
        "time lets it run on the CPU.",
        steps=(
            'device = "{torch_device}" if {torch_available} else "cpu", and .to(device) for the '
            "model and every batch.",
        ),
        frameworks=PYTORCH,
    ),
    Remedy(
        "allow_cpu",
        "Let the cell run on the CPU",
        "JAX falls back to the CPU when no GPU backend starts, unless JAX_PLATFORMS asks for one.",
        steps=("Unset JAX_PLATFORMS, or set JAX_PLATFORMS=cpu, before JAX starts.",),
        frameworks=JAX,
    ),
    Remedy(
        "allow_cpu",
        "Let the cell run without a GPU",
        "A cell that asks for a GPU fails where there is none; asking for the CPU lets it run, "
        "slower.",
        steps=("Choose the device at run time, and the CPU when no GPU is found.",),
    ),
    Remedy(
        "install_gpu_pytorch",
        "Install PyTorch's CUDA build",
        "PyTorch's CPU-only wheels (pip's default on Windows, and any +cpu build) have no CUDA "
        "kernels, however well the driver is set up.",
        steps=(
            "pip uninstall -y torch, then install the CUDA wheel that the selector on "
            "pytorch.org names for your driver, e.g. pip install torch --index-url "
            "https://download.pytorch.org/whl/cu124, and restart the kernel.",
            "torch.cuda.is_available() should then say True; torch.version.cuda names its CUDA.",
        ),
        links=(("Install PyTorch", PYTORCH_INSTALL),),
        frameworks=PYTORCH,
        vendors=NVIDIA,
    ),
    Remedy(
        "install_gpu_pytorch",
        "Install PyTorch's ROCm build",
        "PyTorch's CPU-only and CUDA wheels have no ROCm kernels.",
        steps=(
            "pip uninstall -y torch, then install the ROCm wheel that the selector on "
            "pytorch.org names for your ROCm release, and restart the kernel.",
            "torch.version.hip then names its ROCm.",
        ),
        links=(("Install PyTorch", PYTORCH_INSTALL),),
        frameworks=PYTORCH,
        vendors=AMD,
    ),
    Remedy(
        "install_gpu_pytorch",
        "Use the Mac's GPU through MPS",
        "A Mac has no CUDA: PyTorch runs on its GPU through the MPS backend.",
        steps=(
            'Use device "mps" instead of "cuda" (torch.backends.mps.is_available() says whether '
            'it works), and load checkpoints with map_location="mps" or "cpu".',
        ),
        frameworks=PYTORCH,
        vendors=APPLE,
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
        links=(("Install JAX", JAX_INSTALL),),
        frameworks=JAX,
        vendors=NVIDIA,
    ),
    Remedy(
        "install_gpu_jax",
        "Install JAX's ROCm plugin",
        "JAX runs on the CPU unless its ROCm plugin loads, at JAX's own version.",
        steps=('pip install -U "jax[rocm]" for your ROCm release, then restart the kernel.',),
        links=(("Install JAX", JAX_INSTALL),),
        frameworks=JAX,
        vendors=AMD,
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
        frameworks=PYTORCH,
        vendors=APPLE,
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
        links=(("NVIDIA Container Toolkit", CONTAINER_TOOLKIT),),
        vendors=NVIDIA,
    ),
)

_DATA_REMEDIES = (
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
        frameworks=TF_KERAS,
    ),
    Remedy(
        "check_shapes",
        "Check the shapes of the data against the model",
        "The model received a tensor of another shape than it was built for; the GPU is not "
        "involved.",
        steps=(
            "Print x.shape and y.shape of one batch, and the shapes the first and last layers "
            "expect (print(model) lists them).",
            "nn.CrossEntropyLoss takes class indices (int64, shape [batch]); one-hot or "
            "probability targets need float targets of the output's shape.",
        ),
        frameworks=PYTORCH,
    ),
    Remedy(
        "check_shapes",
        "Check the shapes of the data against the model",
        "An operation received arrays of shapes it cannot combine; the GPU is not involved.",
        steps=(
            "Print the shapes of one batch's inputs and labels, and of the model's input and "
            "output, and compare them.",
        ),
    ),
    Remedy(
        "cast_dtype",
        "Cast the data to the model's dtype",
        "NumPy creates float64 by default; Keras layers compute in float32.",
        steps=('x = x.astype("float32") (NumPy) or tf.cast(x, tf.float32).',),
        frameworks=TENSORFLOW,
    ),
    Remedy(
        "cast_dtype",
        "Cast the data to the model's dtype",
        "NumPy creates float64 by default; PyTorch's layers hold float32 weights.",
        steps=("x = x.float() (labels for a classification loss: y.long()).",),
        frameworks=PYTORCH,
    ),
    Remedy(
        "cast_dtype",
        "Cast the data to the model's dtype",
        "NumPy creates float64 by default; models compute in float32.",
        steps=('x = x.astype("float32") before it reaches the model.',),
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
        frameworks=TENSORFLOW,
    ),
    Remedy(
        "numeric_array",
        "Make the array numeric",
        "An array of dtype object holds Python values of mixed types or lengths (a DataFrame "
        "column of strings, ragged lists); a model's tensors need one numeric dtype.",
        steps=(
            'x = np.asarray(x).astype("float32"), or df.to_numpy(dtype="float32") for a DataFrame;',
            "a column that will not convert holds text or missing values: encode or drop it;",
            "ragged rows: pad them to one length first.",
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
        frameworks=TENSORFLOW,
    ),
    Remedy(
        "pad_batches",
        "Give the elements of a batch one shape",
        "A batch is one tensor, so every element in it needs the same shape.",
        steps=(
            "Resize in the Dataset's transform (torchvision.transforms.Resize((224, 224)));",
            "or pad in a collate_fn: torch.nn.utils.rnn.pad_sequence(items, batch_first=True).",
        ),
        frameworks=PYTORCH,
    ),
    Remedy(
        "pad_batches",
        "Give the elements of a batch one shape",
        "Arrays stacked into one batch must all have the same shape.",
        steps=(
            "Print the shapes of the items stacked together; resize or pad them to one shape "
            "before stacking.",
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
        frameworks=TENSORFLOW,
    ),
    Remedy(
        "convert_input",
        "Give fit data it can batch",
        "Keras reads NumPy arrays, tensors, a tf.data.Dataset, a keras.utils.PyDataset or a "
        "generator; a Python list of arrays or of numbers is none of them.",
        steps=(
            "Convert lists: x = np.asarray(x, dtype='float32'), y = np.asarray(y) (ragged lists "
            "need padding first).",
            "Check what fit receives: print(type(x), getattr(x, 'shape', None)).",
        ),
        frameworks=TF_KERAS,
    ),
    Remedy(
        "enough_batches",
        "Give fit as many batches as it asks for",
        "fit asked for more batches than the data holds: steps_per_epoch × epochs is more than "
        "a dataset or generator that is not repeated gives.",
        steps=(
            "Leave steps_per_epoch out (fit then runs each epoch to the data's end), or repeat "
            "the dataset: ds.repeat();",
            "with validation_steps, the same for the validation data.",
        ),
        frameworks=TF_KERAS,
    ),
    Remedy(
        "check_files",
        "Find the files that cannot be read",
        "A file of the data set is empty, cut short or not an image at all; the loader stops at "
        "the first one. The GPU is not involved.",
        steps=(
            "Open each file once, outside training (PIL.Image.open(path).verify() for images), "
            "and remove or download again the ones that fail;",
            "the error names the file or the index when the loader gives it.",
        ),
    ),
)

CATALOG: tuple[Remedy, ...] = (
    *_MEMORY_REMEDIES,
    *_HANG_AND_FAULT_REMEDIES,
    *_SOFTWARE_REMEDIES,
    *_NO_GPU_REMEDIES,
    *_DATA_REMEDIES,
)
