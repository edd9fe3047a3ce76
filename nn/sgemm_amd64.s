//go:build amd64 && !openblas && !purego

#include "textflag.h"

// func sgemmKernel6x16(k int, a *float32, lda int, b, c *float32, ldc int, acc bool)
//
// c[0:6, 0:16] (row stride ldc) = (acc ? c : 0) + Σ_p a[r*lda+p]·b[p*16+j]:
// a is six rows of A read in place (row stride lda), b a packed 16-column
// panel of B, k deep. Y0-Y11 hold the 6×16 tile, Y12-Y13 a row of b,
// Y14-Y15 the broadcast elements of a. k must be at least 1.
TEXT ·sgemmKernel6x16(SB), NOSPLIT, $0-49
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R10
	SHLQ $2, R10
	LEAQ (SI)(R10*2), R11
	ADDQ R10, R11 // row 3
	MOVQ b+24(FP), DI
	MOVQ c+32(FP), DX
	MOVQ ldc+40(FP), R8
	SHLQ $2, R8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

loop:
	VMOVUPS (DI), Y12
	VMOVUPS 32(DI), Y13
	VBROADCASTSS (SI), Y14
	VFMADD231PS Y12, Y14, Y0
	VFMADD231PS Y13, Y14, Y1
	VBROADCASTSS (SI)(R10*1), Y15
	VFMADD231PS Y12, Y15, Y2
	VFMADD231PS Y13, Y15, Y3
	VBROADCASTSS (SI)(R10*2), Y14
	VFMADD231PS Y12, Y14, Y4
	VFMADD231PS Y13, Y14, Y5
	VBROADCASTSS (R11), Y15
	VFMADD231PS Y12, Y15, Y6
	VFMADD231PS Y13, Y15, Y7
	VBROADCASTSS (R11)(R10*1), Y14
	VFMADD231PS Y12, Y14, Y8
	VFMADD231PS Y13, Y14, Y9
	VBROADCASTSS (R11)(R10*2), Y15
	VFMADD231PS Y12, Y15, Y10
	VFMADD231PS Y13, Y15, Y11
	ADDQ $4, SI
	ADDQ $4, R11
	ADDQ $64, DI
	DECQ CX
	JNZ loop

	MOVBLZX acc+48(FP), AX
	TESTQ AX, AX
	JZ store
	MOVQ DX, R9
	VADDPS (R9), Y0, Y0
	VADDPS 32(R9), Y1, Y1
	ADDQ R8, R9
	VADDPS (R9), Y2, Y2
	VADDPS 32(R9), Y3, Y3
	ADDQ R8, R9
	VADDPS (R9), Y4, Y4
	VADDPS 32(R9), Y5, Y5
	ADDQ R8, R9
	VADDPS (R9), Y6, Y6
	VADDPS 32(R9), Y7, Y7
	ADDQ R8, R9
	VADDPS (R9), Y8, Y8
	VADDPS 32(R9), Y9, Y9
	ADDQ R8, R9
	VADDPS (R9), Y10, Y10
	VADDPS 32(R9), Y11, Y11

store:
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y2, (DX)
	VMOVUPS Y3, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y4, (DX)
	VMOVUPS Y5, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y6, (DX)
	VMOVUPS Y7, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y8, (DX)
	VMOVUPS Y9, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y10, (DX)
	VMOVUPS Y11, 32(DX)
	VZEROUPPER
	RET

// func axpyAVX(y *float32, a float32, x *float32, n int)
//
// y[0:n] += a·x[0:n] for n a multiple of 8.
TEXT ·axpyAVX(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	VBROADCASTSS a+8(FP), Y0
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), CX
loop32:
	CMPQ CX, $32
	JLT loop8
	VMOVUPS 0(SI), Y1
	VMOVUPS 32(SI), Y2
	VMOVUPS 64(SI), Y3
	VMOVUPS 96(SI), Y4
	VFMADD213PS 0(DI), Y0, Y1
	VFMADD213PS 32(DI), Y0, Y2
	VFMADD213PS 64(DI), Y0, Y3
	VFMADD213PS 96(DI), Y0, Y4
	VMOVUPS Y1, 0(DI)
	VMOVUPS Y2, 32(DI)
	VMOVUPS Y3, 64(DI)
	VMOVUPS Y4, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP loop32
loop8:
	CMPQ CX, $8
	JLT done
	VMOVUPS (SI), Y1
	VFMADD213PS (DI), Y0, Y1
	VMOVUPS Y1, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP loop8
done:
	VZEROUPPER
	RET

// GOMAX computes, in Y2, max(Y0, Y1) as Go's built-in max does: the larger
// value, +0 for a +0 and a −0, and NaN when either is NaN. VMAXPS alone
// returns its second operand on ties and when either is NaN, so ties take
// Y0 AND Y1 (the same value, or +0 for mixed zeros) and a NaN in Y0 is put
// back. Clobbers Y3-Y5.
#define GOMAX \
	VMAXPS Y1, Y0, Y2; \
	VCMPPS $0, Y1, Y0, Y3; \
	VANDPS Y1, Y0, Y4; \
	VBLENDVPS Y3, Y4, Y2, Y2; \
	VCMPPS $3, Y0, Y0, Y5; \
	VBLENDVPS Y5, Y0, Y2, Y2

// func maxAVX(y, x *float32, n int)
//
// y[i] = max(y[i], x[i]) for n a multiple of 8.
TEXT ·maxAVX(SB), NOSPLIT, $0-24
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
maxloop:
	CMPQ CX, $8
	JLT maxdone
	VMOVUPS (DI), Y0
	VMOVUPS (SI), Y1
	GOMAX
	VMOVUPS Y2, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP maxloop
maxdone:
	VZEROUPPER
	RET

// func reluAVX(y, x *float32, n int)
//
// y[i] = max(x[i], 0) for n a multiple of 8.
TEXT ·reluAVX(SB), NOSPLIT, $0-24
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VXORPS Y1, Y1, Y1
reluloop:
	CMPQ CX, $8
	JLT reludone
	VMOVUPS (SI), Y0
	GOMAX
	VMOVUPS Y2, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP reluloop
reludone:
	VZEROUPPER
	RET

// func reluGradAVX(dst, x, grad *float32, n int)
//
// dst[i] = grad[i] where x[i]'s bits, read as an int32, are positive (x > 0),
// else 0, as reluGrad32, for n a multiple of 8.
TEXT ·reluGradAVX(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ grad+16(FP), DX
	MOVQ n+24(FP), CX
	VPXOR Y2, Y2, Y2
rgloop:
	CMPQ CX, $8
	JLT rgdone
	VMOVDQU (SI), Y0
	VPCMPGTD Y2, Y0, Y1 // x > 0 as int32
	VPAND (DX), Y1, Y1
	VMOVDQU Y1, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $8, CX
	JMP rgloop
rgdone:
	VZEROUPPER
	RET

// func maxArgAVX(out *float32, arg *int32, row *float32, n int, e int32)
//
// For n a multiple of 8: arg[j] = e where row[j] > out[j] (ordered, so a
// NaN never wins), then out[j] = max(out[j], row[j]) as maxAVX.
TEXT ·maxArgAVX(SB), NOSPLIT, $0-36
	MOVQ out+0(FP), DI
	MOVQ arg+8(FP), R9
	MOVQ row+16(FP), SI
	MOVQ n+24(FP), CX
	MOVL e+32(FP), AX
	VMOVD AX, X8
	VPBROADCASTD X8, Y8
maloop:
	CMPQ CX, $8
	JLT madone
	VMOVUPS (DI), Y0
	VMOVUPS (SI), Y1
	VCMPPS $30, Y0, Y1, Y6 // row > out (GT_OQ)
	VMOVDQU (R9), Y7
	VBLENDVPS Y6, Y8, Y7, Y7
	VMOVDQU Y7, (R9)
	GOMAX
	VMOVUPS Y2, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, R9
	SUBQ $8, CX
	JMP maloop
madone:
	VZEROUPPER
	RET

// func routeMaskAVX(mask *float32, arg *int32, e int32, out *float32, n int) int
//
// For n a multiple of 8: mask[j] = all ones where arg[j] == e and out[j]
// is not NaN, else 0; returns how many lanes are set.
TEXT ·routeMaskAVX(SB), NOSPLIT, $0-48
	MOVQ mask+0(FP), DI
	MOVQ arg+8(FP), SI
	MOVL e+16(FP), AX
	VMOVD AX, X8
	VPBROADCASTD X8, Y8
	MOVQ out+24(FP), DX
	MOVQ n+32(FP), CX
	XORQ AX, AX
rmloop:
	CMPQ CX, $8
	JLT rmdone
	VPCMPEQD (SI), Y8, Y1
	VMOVUPS (DX), Y0
	VCMPPS $7, Y0, Y0, Y2 // ordered: not NaN
	VANDPS Y2, Y1, Y1
	VMOVUPS Y1, (DI)
	VMOVMSKPS Y1, BX
	POPCNTL BX, BX
	ADDQ BX, AX
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, DX
	SUBQ $8, CX
	JMP rmloop
rmdone:
	VZEROUPPER
	MOVQ AX, ret+40(FP)
	RET

// func routeAVX(y *float32, w float32, grad *float32, mask *float32, n int)
//
// For n a multiple of 8: y[j] += w·grad[j] (a product rounded, then a sum
// rounded, as Go computes it) where mask[j] is set; other lanes keep y[j].
TEXT ·routeAVX(SB), NOSPLIT, $0-40
	MOVQ y+0(FP), DI
	VBROADCASTSS w+8(FP), Y8
	MOVQ grad+16(FP), SI
	MOVQ mask+24(FP), DX
	MOVQ n+32(FP), CX
rtloop:
	CMPQ CX, $8
	JLT rtdone
	VMOVUPS (DI), Y0
	VMULPS (SI), Y8, Y1
	VADDPS Y1, Y0, Y1
	VMOVUPS (DX), Y2
	VBLENDVPS Y2, Y1, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, DX
	SUBQ $8, CX
	JMP rtloop
rtdone:
	VZEROUPPER
	RET
