/* Minimal start-up for a Cortex-M4F: the vector table, a reset handler that enables the FPU,
 * initialises .data and .bss and the semihosting console (newlib's rdimon), runs main and ends
 * the program through semihosting, and a fault handler that does the same with a failure.
 * Under QEMU (-semihosting-config enable=on) the exit becomes QEMU's exit status: 0 when main
 * returned 0, 1 otherwise, also after a fault (instead of spinning forever). */
#include <stdint.h>
#include <stdio.h>

/* Linker script symbols (link.ld). */
extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;

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

void Reset_Handler(void) {
    /* Full access to coprocessors 10 and 11 (the FPU) in CPACR, before any float instruction:
     * the library is built for thumbv7em-none-eabihf (hard float). */
    *(volatile uint32_t *)0xE000ED88u |= 0xFu << 20;
    __asm__ volatile("dsb\n\tisb" ::: "memory");

    for (uint32_t *src = &_sidata, *dst = &_sdata; dst < &_edata;)
        *dst++ = *src++;
    for (uint32_t *dst = &_sbss; dst < &_ebss;)
        *dst++ = 0;

    initialise_monitor_handles();
    int code = main();
    fflush(stdout);
    semihosting_exit(code == 0);
}

void Fault_Handler(void) {
    fputs("error: fault\n", stderr);
    semihosting_exit(0);
}

void Default_Handler(void) {
    semihosting_exit(0);
}
