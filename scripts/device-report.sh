#!/usr/bin/env bash
# Device report for the firmware's embedded bundle (firmware/data/bundle.cent): flash, static
# RAM, stack high-water, bundle bytes and relative instructions per explanation, each against
# the device goals. Exits 1 when a goal is missed.
#
#   scripts/device-report.sh            # build, measure, print the report
#   scripts/device-report.sh --parity   # also run the bit-exact parity test (builds cent-host)
#
# Needs qemu-system-arm and llvm-tools (.ci/setup.sh installs both).
#
# Where the numbers come from:
#   flash        llvm-size of the `firmware` ELF: .vector_table + .text + .rodata + .data
#                (the bundle and queries are in .rodata)
#   static RAM   .data + .bss + .uninit of the same ELF (the explainer scratch is a static)
#   stack        deepest use of cortex-m-rt's painted stack, the larger of the `firmware` run
#                (explain + print every query) and the `bench` run
#   instructions SysTick ticks x 40 under QEMU `-icount shift=0` (1 ns per instruction, 25 MHz
#                SysTick), summed over one explain call per embedded query / number of calls.
#                A deterministic relative count, not cycles of a real M4.
set -euo pipefail
cd "$(dirname "$0")/.."

FLASH_GOAL=$((192 * 1024))
RAM_GOAL=$((48 * 1024))
INSTR_GOAL=2000000
QEMU_ARGS=(-cpu cortex-m4 -machine mps2-an386 -nographic -semihosting-config enable=on,target=native)

parity=0
case "${1:-}" in
  --parity) parity=1 ;;
  "") ;;
  *) echo "usage: $0 [--parity]" >&2; exit 2 ;;
esac

command -v qemu-system-arm >/dev/null || { echo "qemu-system-arm not found: run .ci/setup.sh" >&2; exit 1; }
host=$(rustc -vV | sed -n 's/^host: //p')
llvm_size="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-size"
[ -x "$llvm_size" ] || { echo "llvm-size not found: rustup component add llvm-tools" >&2; exit 1; }

# Pinned target dir: a CARGO_TARGET_DIR meant for the host must not move the ELFs read below.
(cd firmware && CARGO_TARGET_DIR="$PWD/target" cargo build --release --locked --bins --quiet)
out=firmware/target/thumbv7em-none-eabihf/release

# Sum of the named sections' sizes in `llvm-size -A` output.
sections() {
  local elf=$1; shift
  "$llvm_size" -A "$elf" | awk -v want=" $* " '
    index(want, " " $1 " ") { total += $2 } END { print total + 0 }'
}

# The value of key=value in a line of text.
field() { tr ' ' '\n' <<<"$2" | sed -n "s/^$1=//p"; }

flash=$(sections "$out/firmware" .vector_table .text .rodata .data)
static_ram=$(sections "$out/firmware" .data .bss .uninit)
bundle=$(stat -c %s firmware/data/bundle.cent)
queries=$(stat -c %s firmware/data/queries.bin)

# Runs an ELF in QEMU and prints the line of its output (stdout and stderr) starting with $2.
qemu_line() {
  local elf=$1 prefix=$2 text
  shift 2
  if ! text=$(timeout 120 qemu-system-arm "${QEMU_ARGS[@]}" "$@" -kernel "$elf" 2>&1); then
    printf '%s failed in QEMU:\n%s\n' "$elf" "$text" >&2
    exit 1
  fi
  grep "^$prefix " <<<"$text" || { printf 'no "%s" line from %s:\n%s\n' "$prefix" "$elf" "$text" >&2; exit 1; }
}

run=$(qemu_line "$out/firmware" memory)
bench=$(qemu_line "$out/bench" bench -icount shift=0)
stack_run=$(field stack "$run")
stack_bench=$(field stack "$bench")
stack=$(( stack_run > stack_bench ? stack_run : stack_bench ))
ram=$((static_ram + stack))
calls=$(field calls "$bench")
instr=$(field instr_per_call "$bench")
max_instr=$(field max_instr "$bench")
load_instr=$(field load_instr "$bench")

failed=0
verdict() { if [ "$1" -le "$2" ]; then echo "ok"; else failed=1; echo "OVER"; fi; }
kib() { awk -v b="$1" 'BEGIN { printf "%.1f KiB", b / 1024 }'; }

# The bundle's name: the first payload field (a postcard string; a one-byte length below 128).
name_len=$(od -An -tu1 -j14 -N1 firmware/data/bundle.cent | tr -d ' ')
name=$( [ "${name_len:-128}" -lt 128 ] && dd if=firmware/data/bundle.cent bs=1 skip=15 count="$name_len" 2>/dev/null || echo "?")
printf 'device report: %s (bundle "%s")\n' "$out/firmware" "$name"
printf '  %-26s %12s  %-12s %s\n' "metric" "bytes/count" "" "goal"
printf '  %-26s %12d  %-12s <= %s: %s\n' "flash (incl. bundle)" "$flash" "$(kib "$flash")" "$(kib $FLASH_GOAL)" "$(verdict "$flash" $FLASH_GOAL)"
printf '  %-26s %12d  %-12s\n' "  bundle" "$bundle" "$(kib "$bundle")"
printf '  %-26s %12d  %-12s\n' "  queries" "$queries" "$(kib "$queries")"
printf '  %-26s %12d  %-12s\n' "  code + constants" "$((flash - bundle - queries))" "$(kib $((flash - bundle - queries)))"
printf '  %-26s %12d  %-12s\n' "static RAM (data+bss)" "$static_ram" "$(kib "$static_ram")"
printf '  %-26s %12d  %-12s (firmware run %d, bench run %d)\n' "stack high-water" "$stack" "$(kib "$stack")" "$stack_run" "$stack_bench"
printf '  %-26s %12d  %-12s <= %s: %s\n' "static RAM + stack" "$ram" "$(kib "$ram")" "$(kib $RAM_GOAL)" "$(verdict "$ram" $RAM_GOAL)"
printf '  %-26s %12d  %-12s <= %d: %s\n' "instructions/explanation" "$instr" "mean of $calls" "$INSTR_GOAL" "$(verdict "$instr" $INSTR_GOAL)"
printf '  %-26s %12d\n' "  slowest explanation" "$max_instr"
printf '  %-26s %12d  %s\n' "bundle load (once)" "$load_instr" "instructions: header, CRC-32, validation"

if [ "$parity" = 1 ]; then
  if cargo test -q -p cent-tests --test firmware >/dev/null 2>&1; then
    echo "  parity with the host's native run: bit-exact (cargo test -p cent-tests --test firmware)"
  else
    failed=1
    echo "  parity with the host's native run: FAILED (cargo test -p cent-tests --test firmware)"
  fi
fi
exit "$failed"
