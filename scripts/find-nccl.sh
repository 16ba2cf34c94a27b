# find-nccl.sh — sourced by the data-parallel scripts (`. scripts/find-nccl.sh`): rlc loads
# libnccl.so.2 at run time (docs/distributed.md); where neither the loader nor the CUDA toolkit
# has it, use pip's nvidia-nccl-cu13 (installed beside PyTorch) through RLC_NCCL_LIBRARY.
if [ -z "${RLC_NCCL_LIBRARY:-}" ] && [ ! -e "${CUDA_HOME:-/usr/local/cuda}/lib64/libnccl.so.2" ] &&
    ! ldconfig -p 2>/dev/null | grep -q 'libnccl\.so\.2 '; then
    nccl_lib=$(python3 -c 'import os, nvidia.nccl; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
    if [ -n "$nccl_lib" ] && [ -e "$nccl_lib" ]; then
        export RLC_NCCL_LIBRARY=$nccl_lib
    fi
fi
echo "NCCL: ${RLC_NCCL_LIBRARY:-libnccl.so.2 from the loader's path or ${CUDA_HOME:-/usr/local/cuda}/lib64}"
