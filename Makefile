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

BUILD   := build$(if $(filter 1,$(ASAN)),/asan)$(if $(filter 1,$(DEBUG)),/debug)
CFLAGS  := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wno-unused-parameter -Isrc -fopenmp -MMD -MP
LDFLAGS := -fopenmp
LDLIBS  := -lcjson -lpcre2-8 -lutf8proc -lm -lpthread

ifeq ($(DEBUG),1)
CFLAGS  += -O0 -g
else
CFLAGS  += -O3 -g -march=native
endif
ifeq ($(ASAN),1)
CFLAGS  += -fsanitize=address,undefined -fno-omit-frame-pointer
LDFLAGS += -fsanitize=address,undefined
endif

LIB_SRC := $(shell find src -name '*.c' -not -path 'src/cli/*' -not -path 'src/backend/cuda/*' | sort)
CLI_SRC := $(sort $(wildcard src/cli/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)

CU_SRC := $(if $(filter 1,$(CUDA)),$(sort $(wildcard src/backend/cuda/*.cu)))
ifneq ($(CU_SRC),)
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CU_OBJ    := $(CU_SRC:%.cu=$(BUILD)/obj/%.o)
NVFLAGS   := -std=c++17 -O3 -g -lineinfo -Isrc -gencode=arch=compute_$(ARCH),code=sm_$(ARCH) \
             -Xcompiler -Wall,-Wextra,-Wno-unused-parameter -MMD -MP
CFLAGS    += -DRL_HAVE_CUDA=1 -I$(CUDA_HOME)/include
LDLIBS    += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublasLt -lcublas -lcudart -lnvrtc -lstdc++
endif

TEST_SRC := $(shell find tests -name 'test_*.c' -not -path 'tests/gpu/*' | sort)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
GPU_TEST_SRC := $(sort $(wildcard tests/gpu/test_*.c))
GPU_TEST_BIN := $(GPU_TEST_SRC:tests/%.c=$(BUILD)/tests/%)

.PHONY: all test test-bins gpu-test bench demo fuzz deps deps-ok clean
all: $(BUILD)/rlc $(BUILD)/librlc.a

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

# The set-up commands install missing Debian packages first (a no-op when all are there).
deps-ok:
	@sh scripts/install-deps.sh

test-bins: $(TEST_BIN) $(BUILD)/rlc
test: deps-ok
	@$(MAKE) --no-print-directory test-bins
	@BUILD=$(BUILD) sh tests/run.sh $(TEST_BIN)

gpu-test: $(GPU_TEST_BIN) $(BUILD)/rlc
	@BUILD=$(BUILD) sh tests/run.sh $(GPU_TEST_BIN)

deps:
	sh scripts/install-deps.sh

clean:
	rm -rf build

-include $(shell find build -name '*.d' 2>/dev/null)
