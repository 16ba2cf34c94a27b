# rlc — one Makefile. `make` builds build/rlc and build/librlc.a (CPU, plus CUDA when nvcc is
# found); `make test` runs the CPU tests; `make demo` trains the tiny demo model; `make gpu-test`
# and `make bench` need a GPU (scripts/gpu-check.sh runs both and prints a table).
# Flags: CUDA=0|1  ARCH=90a  DEBUG=1  ASAN=1.

CC      ?= cc
NVCC    ?= $(shell command -v nvcc 2>/dev/null)
CUDA    ?= $(if $(NVCC),1,0)
ARCH    ?= 90a
DEBUG   ?= 0
ASAN    ?= 0

# OpenMP threads sleep rather than spin at barriers: tests run two at a time on two cores, and
# spinning threads that wait for a descheduled peer slow everything several times over.
export OMP_WAIT_POLICY ?= passive

# CPU-only and CUDA builds keep their objects apart, so switching CUDA= never mixes them.
BUILD   ?= build$(if $(filter 1,$(CUDA)),,/cpu)$(if $(filter 1,$(ASAN)),/asan)$(if $(filter 1,$(DEBUG)),/debug)
CFLAGS  := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wno-unused-parameter -Isrc -fopenmp -MMD -MP
LDFLAGS := -fopenmp
LDLIBS  := -lcjson -lpcre2-8 -lutf8proc -lseccomp -lm -lpthread -ldl

ifeq ($(DEBUG),1)
CFLAGS  += -O0 -g
else
CFLAGS  += -O3 -g -march=native
endif
ifeq ($(ASAN),1)
CFLAGS  += -fsanitize=address,undefined -fno-omit-frame-pointer
LDFLAGS += -fsanitize=address,undefined
endif

LIB_SRC := $(shell find src -name '*.c' -not -path 'src/cli/*' -not -path 'src/backend/cuda/*' \
                -not -path 'src/reward/kernel_env/preload/*' | sort)
CLI_SRC := $(sort $(wildcard src/cli/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)

CU_SRC := $(if $(filter 1,$(CUDA)),$(sort $(wildcard src/backend/cuda/*.cu)))
ifneq ($(CU_SRC),)
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CU_OBJ    := $(CU_SRC:%.cu=$(BUILD)/obj/%.o)
# NCCL: compiled against the toolkit's nccl.h; libnccl.so.2 is loaded at run time (nccl.cu),
# from $RLC_NCCL_LIBRARY, the loader's path, or this toolkit's lib64.
NVFLAGS   := -std=c++17 -O3 -g -lineinfo -Isrc -gencode=arch=compute_$(ARCH),code=sm_$(ARCH) \
             -Xcompiler -Wall,-Wextra,-Wno-unused-parameter -MMD -MP \
             -DRL_NCCL_TOOLKIT_LIB='"$(CUDA_HOME)/lib64/libnccl.so.2"'
CFLAGS    += -DRL_HAVE_CUDA=1 -I$(CUDA_HOME)/include
LDLIBS    += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublasLt -lcublas -lcudart -lnvrtc -lstdc++
endif

TEST_SRC := $(shell find tests -name 'test_*.c' -not -path 'tests/gpu/*' | sort)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
GPU_TEST_SRC := $(sort $(wildcard tests/gpu/test_*.c))
GPU_TEST_BIN := $(GPU_TEST_SRC:tests/%.c=$(BUILD)/tests/%)

.PHONY: all test test-bins gpu-test bench demo demo-ppo fuzz fuzz-corpus deps deps-ok clean
all: $(BUILD)/rlc $(BUILD)/librlc.a $(BUILD)/librlc-kenv-preload.so

# Preloaded into sandboxed GPU workers (kenv_preload.c): plain flags, never sanitizers.
$(BUILD)/librlc-kenv-preload.so: src/reward/kernel_env/preload/kenv_preload.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -Wall -Wextra -shared -fPIC -o $@ $< -ldl

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/obj/%.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) -c $< -o $@

$(BUILD)/librlc.a: $(LIB_OBJ) $(CU_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/rlc: $(CLI_OBJ) $(BUILD)/librlc.a
	$(CC) $(LDFLAGS) $(CLI_OBJ) $(BUILD)/librlc.a $(LDLIBS) -o $@

$(BUILD)/tests/%: tests/%.c tests/test_util.h $(BUILD)/librlc.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests $< $(BUILD)/librlc.a $(LDFLAGS) $(LDLIBS) -lcriterion -o $@

# Kernel environment worker (docs/kernel-env.md): a separate CUDA program, the one place outside
# src/backend/cuda that includes CUDA headers; built only when nvcc is found.
KENV_WORKER_SRC := $(sort $(wildcard src/reward/kernel_env/worker/*.cu))
ifeq ($(CUDA),1)
KENV_CUDA_LIB := $(patsubst %/bin/nvcc,%,$(NVCC))/lib64
all: $(BUILD)/rlc-kernel-worker
$(BUILD)/rlc-kernel-worker: $(KENV_WORKER_SRC) src/reward/kernel_env/worker/wk.h src/reward/kernel_env/include/rl_kernel.h
	@mkdir -p $(dir $@)
	$(NVCC) -std=c++17 -O2 -g -gencode=arch=compute_$(ARCH),code=sm_$(ARCH) -cudart shared \
	    -Isrc/reward/kernel_env/include -I$(patsubst %/bin/nvcc,%,$(NVCC))/extras/CUPTI/include \
	    -Xcompiler -Wall,-Wextra $(KENV_WORKER_SRC) -o $@ \
	    -Xlinker -rpath,$(KENV_CUDA_LIB) -ldl -lpthread
endif

# The set-up commands install missing Debian packages first (a no-op when all are there).
deps-ok:
	@sh scripts/install-deps.sh

test-bins: $(TEST_BIN) $(BUILD)/rlc $(BUILD)/librlc-kenv-preload.so
test: deps-ok
	@$(MAKE) --no-print-directory test-bins
	@BUILD=$(BUILD) sh tests/run.sh $(TEST_BIN)

# The README's main job: a tiny Qwen3 model trained from scratch on the CPU, SFT then GRPO,
# with held-out accuracy after each (src/cli/cmd_demo.c, docs/demo.md).
demo: deps-ok
	@$(MAKE) --no-print-directory $(BUILD)/rlc
	$(BUILD)/rlc demo --out runs/demo

# GPU: a tiny policy taught kernel variants by SFT, then GRPO on the kernel reward measured on the
# GPU; the share of near-best samples should rise (src/train/demo/demo_kernel.h).
.PHONY: demo-kernel
demo-kernel: deps-ok
	@$(MAKE) --no-print-directory $(BUILD)/rlc $(BUILD)/rlc-kernel-worker $(BUILD)/librlc-kenv-preload.so
	$(BUILD)/rlc demo-kernel --out runs/demo-kernel

# PPO against GRPO on the demo's task from the same SFT checkpoint and rollouts per step,
# held-out accuracy curves (scripts/demo-ppo.sh, docs/demo.md).
demo-ppo: deps-ok
	@$(MAKE) --no-print-directory $(BUILD)/rlc
	sh scripts/demo-ppo.sh $(BUILD)/rlc runs/demo-ppo

gpu-test: $(GPU_TEST_BIN) $(BUILD)/rlc
	@BUILD=$(BUILD) sh tests/run.sh $(GPU_TEST_BIN)

deps:
	sh scripts/install-deps.sh

# Benchmark programs (not tests): bench/NAME.c -> $(BUILD)/bench/NAME.
$(BUILD)/bench/%: bench/%.c $(BUILD)/librlc.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(BUILD)/librlc.a $(LDFLAGS) $(LDLIBS) -o $@

# Tokenizer benchmark (CPU, not a test): rlc's encoder beside Hugging Face tokenizers.
.PHONY: bench-tokenizer
bench-tokenizer: $(BUILD)/bench/bench_tokenizer
	python3 bench/bench_tokenizer.py --bin $(BUILD)/bench/bench_tokenizer

# Fuzzing (libFuzzer, clang): `make fuzz FUZZ_SECONDS=N` builds fuzz/fuzz_*.c into build/fuzz/ and
# runs each for N seconds from its seed corpus fuzz/corpus/<target>/ (new inputs go to
# build/fuzz/corpus/<target>/), with fuzz/<target>.dict when there is one. A crash fails the
# build; the input is left in fuzz/findings/<target>/ and the log in build/fuzz/<target>.log.
# Only the parsers are linked. FUZZ_SEED=N fixes libFuzzer's seed; without it each run explores
# from a new random seed. `make fuzz-corpus` runs every committed input (seeds, past crashes and
# the inputs earlier campaigns merged in) through its target once: the same on every machine,
# which is what CI runs. A timed run is not: the order libFuzzer reads a corpus directory in, and
# so what it finds in 30 s, differs between file systems.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 30
FUZZ_SEED    ?=
FUZZ_SRC     := $(sort $(wildcard fuzz/fuzz_*.c))
FUZZ_BIN     := $(FUZZ_SRC:fuzz/%.c=build/fuzz/%)
FUZZ_LIB_SRC := src/core/error.c src/core/dtype.c src/core/file.c src/core/number.c src/io/json.c src/io/config.c \
                src/io/safetensors.c src/io/dataset.c src/io/chat.c src/io/chat_text.c src/io/chat_qwen.c \
                src/io/chat_llama.c src/reward/kernel_env/kspec.c \
                src/reward/kernel_env/kstatic.c src/reward/kernel_env/extract.c src/reward/math.c \
                src/rollout/toolcall.c
FUZZ_FLAGS   := -std=c11 -D_GNU_SOURCE -g -O1 -Isrc -fsanitize=fuzzer,address,undefined \
                -fno-sanitize-recover=undefined -fno-omit-frame-pointer

build/fuzz/%: fuzz/%.c $(FUZZ_LIB_SRC) $(wildcard src/core/*.h src/io/*.h src/reward/*.h src/reward/kernel_env/*.h src/rollout/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) $< $(FUZZ_LIB_SRC) -lcjson -lpcre2-8 -lutf8proc -lm -o $@

fuzz: $(FUZZ_BIN)
	@for bin in $(FUZZ_BIN); do \
	    t=$$(basename $$bin); mkdir -p build/fuzz/corpus/$$t fuzz/findings/$$t; \
	    dict=""; [ -f fuzz/$$t.dict ] && dict="-dict=fuzz/$$t.dict"; \
	    if ! $$bin -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 $$dict \
	        $(if $(FUZZ_SEED),-seed=$(FUZZ_SEED)) \
	        -artifact_prefix=fuzz/findings/$$t/ build/fuzz/corpus/$$t fuzz/corpus/$$t > build/fuzz/$$t.log 2>&1; then \
	        tail -n 60 build/fuzz/$$t.log; echo "fuzz: $$t FAILED (input in fuzz/findings/$$t/)"; exit 1; \
	    fi; \
	    echo "fuzz: $$t ok, $$(grep -o 'stat::number_of_executed_units: *[0-9]*' build/fuzz/$$t.log | grep -o '[0-9]*$$') runs in $(FUZZ_SECONDS) s"; \
	done

fuzz-corpus: $(FUZZ_BIN)
	@for bin in $(FUZZ_BIN); do \
	    t=$$(basename $$bin); \
	    if ! $$bin -runs=0 -timeout=10 -rss_limit_mb=2048 -artifact_prefix=build/fuzz/$$t- fuzz/corpus/$$t > build/fuzz/$$t.corpus.log 2>&1; then \
	        tail -n 60 build/fuzz/$$t.corpus.log; echo "fuzz-corpus: $$t FAILED (log in build/fuzz/$$t.corpus.log)"; exit 1; \
	    fi; \
	    echo "fuzz-corpus: $$t ok, $$(ls fuzz/corpus/$$t | wc -l) inputs"; \
	done

# The tokenizer's fuzz targets link the tokenizer (and PCRE2) besides the parsers above.
TOK_FUZZ_SRC := src/io/tokenizer.c src/io/bpe.c src/io/pretokenize.c src/io/chat_tok.c
build/fuzz/fuzz_tokenizer build/fuzz/fuzz_tokenizer_json: build/fuzz/%: fuzz/%.c $(FUZZ_LIB_SRC) $(TOK_FUZZ_SRC) $(wildcard src/core/*.h src/io/*.h src/reward/*.h src/reward/kernel_env/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) $< $(FUZZ_LIB_SRC) $(TOK_FUZZ_SRC) -lcjson -lpcre2-8 -lutf8proc -lm -o $@

# The reward-answer target links the external reward program's reader and its timer.
build/fuzz/fuzz_reward_answer: fuzz/fuzz_reward_answer.c $(FUZZ_LIB_SRC) src/reward/external.c src/core/timer.c \
                               $(wildcard src/core/*.h src/io/*.h src/reward/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) $< $(FUZZ_LIB_SRC) src/reward/external.c src/core/timer.c -lcjson -lpcre2-8 -lutf8proc -lm -o $@

clean:
	rm -rf build

-include $(shell find build -name '*.d' 2>/dev/null)
