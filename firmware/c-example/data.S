/* The firmware's bundle and query batch, in flash, read in place (the assembler finds the
 * files through -Wa,-I<firmware/data>). */
    .section .rodata.cent_data, "a"
    .balign 4
    .global cent_bundle_start
    .global cent_bundle_end
cent_bundle_start:
    .incbin "bundle.cent"
cent_bundle_end:
    .balign 4
    .global cent_queries_start
    .global cent_queries_end
cent_queries_start:
    .incbin "queries.bin"
cent_queries_end:
