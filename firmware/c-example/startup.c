/* Minimal start-up for a Cortex-M4F: the vector table, a reset handler that enables the FPU,
 * initialises .data and .bss and the semihosting console (newlib's rdimon), runs main and ends
 * the program through semihosting, and a fault handler that does the same with a failure.
 * Before main the free RAM above the heap's reserve is painted, so the program can report its
 * stack high-water mark (on stderr, apart from the compared output).
 * Under QEMU (-semihosting-config enable=on) the exit becomes QEMU's exit status: 0 when main
 * returned 0, 1 otherwise, also after a fault (instead of spinning forever). */
#include <stdint.h>
#include <stdio.h>

/* Linker script symbols (link.ld). */
extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack, end;

/* RAM left to newlib's heap (stdio's buffers) above `end`, not painted; and the paint. */
#define HEAP_RESERVE 4096u
#define PAINT 0xCCCCCCCCu
#define RAM_START 0x20000000u

extern int main(void);
extern void initialise_monitor_handles(void);

void Reset_Handler(void);
void Fault_Handler(void);
void Default_Handler(void);

/* ARM semihosting: SYS_EXIT (0x18) with reason ApplicationExit (0x20026) ends QEMU with status
 * 0; RunTimeErrorUnknown (0x20023) with status 1. */
static void __attribute__((noreturn)) semihosting_exit(int ok) {
    register uint32_t op __asm__("r0") = 0x18;
    register uint32_t reason __asm__("r1") = ok ? 0x20026u : 0x20023u;
    __asm__ volatile("bkpt 0xab" : : "r"(op), "r"(reason) : "memory");
    for (;;) {
    }
}

/* Initial stack pointer, then the handlers of the 15 system exceptions. */
__attribute__((section(".vectors"), used)) void (*const vectors[16])(void) = {
    (void (*)(void))(&_estack),
    Reset_Handler,
    Default_Handler, /* NMI */
    Fault_Handler,   /* HardFault */
    Fault_Handler,   /* MemManage */
    Fault_Handler,   /* BusFault */
    Fault_Handler,   /* UsageFault (a Rust panic executes `udf`: see cent-ffi's panic handler) */
    0, 0, 0, 0,
    Default_Handler, /* SVCall */
    Default_Handler, /* DebugMonitor */
    0,
    Default_Handler, /* PendSV */
    Default_Handler, /* SysTick */
};

static uint32_t *paint_start(void) {
    return (uint32_t *)((uintptr_t)&end + HEAP_RESERVE);
}

/* Paints from above the heap's reserve up to just below the current stack pointer. */
static void paint_stack(void) {
    uint32_t *sp;
    __asm__ volatile("mov %0, sp" : "=r"(sp));
    for (uint32_t *p = paint_start(); p < sp - 16;)
        *p++ = PAINT;
}

/* Deepest stack use: from the top of RAM down to the lowest word that lost its paint. */
static uint32_t stack_high_water(void) {
    uint32_t *p = paint_start();
    while (p < &_estack && *p == PAINT)
        p++;
    return (uint32_t)((uintptr_t)&_estack - (uintptr_t)p);
}

void Reset_Handler(void) {
    /* Full access to coprocessors 10 and 11 (the FPU) in CPACR, before any float instruction:
     * the library is built for thumbv7em-none-eabihf (hard float). */
    *(volatile uint32_t *)0xE000ED88u |= 0xFu << 20;
    __asm__ volatile("dsb\n\tisb" ::: "memory");

    for (uint32_t *src = &_sidata, *dst = &_sdata; dst < &_edata;)
        *dst++ = *src++;
    for (uint32_t *dst = &_sbss; dst < &_ebss;)
        *dst++ = 0;

    paint_stack();
    initialise_monitor_handles();
    int code = main();
    fflush(stdout);
    fprintf(stderr, "memory static_ram=%u stack=%u\n", (unsigned)((uintptr_t)&end - RAM_START),
            (unsigned)stack_high_water());
    semihosting_exit(code == 0);
}

void Fault_Handler(void) {
    fputs("error: fault\n", stderr);
    semihosting_exit(0);
}

void Default_Handler(void) {
    semihosting_exit(0);
}
