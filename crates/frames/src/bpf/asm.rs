//! A small eBPF assembler: each method appends one `bpf_insn` (or two, for a 64-bit immediate),
//! named after the instruction, with labels for forward jumps resolved by [`Asm::finish`].
//!
//! Encoding (include/uapi/linux/bpf.h): 8 bytes per instruction, `code`, `dst_reg:4 src_reg:4`
//! (the destination in the low nibble on little-endian hosts), `off: i16`, `imm: i32`.
//! Invariant: a jump's offset counts instructions from the one after the jump.

/// One encoded instruction, as the kernel reads it.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Insn {
    /// Opcode: class | size/op | mode/source.
    pub code: u8,
    /// Destination and source registers, packed.
    pub regs: u8,
    /// Offset: memory displacement or jump distance.
    pub off: i16,
    /// Immediate.
    pub imm: i32,
}

/// A register, r0..r10 (r10 the read-only frame pointer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reg(pub u8);

/// r0: return value and helper results.
pub const R0: Reg = Reg(0);
/// r1: first argument (the program's context at entry).
pub const R1: Reg = Reg(1);
/// r2: second argument.
pub const R2: Reg = Reg(2);
/// r3: third argument.
pub const R3: Reg = Reg(3);
/// r4: fourth argument.
pub const R4: Reg = Reg(4);
/// r5: fifth argument.
pub const R5: Reg = Reg(5);
/// r6: callee-saved.
pub const R6: Reg = Reg(6);
/// r7: callee-saved.
pub const R7: Reg = Reg(7);
/// r8: callee-saved.
pub const R8: Reg = Reg(8);
/// r9: callee-saved.
pub const R9: Reg = Reg(9);
/// r10: the frame pointer (stack grows down from it).
pub const R10: Reg = Reg(10);

/// Memory access sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// 1 byte.
    B = 0x10,
    /// 2 bytes.
    H = 0x08,
    /// 4 bytes.
    W = 0x00,
    /// 8 bytes.
    DW = 0x18,
}

/// Jump conditions (the op bits of BPF_JMP), unsigned where it matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cond {
    /// ==
    Eq = 0x10,
    /// > unsigned
    Gt = 0x20,
    /// >= unsigned
    Ge = 0x30,
    /// !=
    Ne = 0x50,
}

/// A jump target, placed with [`Asm::label`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Label(usize);

// Instruction classes and fields.
const LD: u8 = 0x00;
const LDX: u8 = 0x01;
const ST: u8 = 0x02;
const STX: u8 = 0x03;
const ALU: u8 = 0x04;
const JMP: u8 = 0x05;
const ALU64: u8 = 0x07;
const MEM: u8 = 0x60;
const IMM: u8 = 0x00;
const K: u8 = 0x00;
const X: u8 = 0x08;
const ADD: u8 = 0x00;
const SUB: u8 = 0x10;
const MUL: u8 = 0x20;
const DIV: u8 = 0x30;
const AND: u8 = 0x50;
const RSH: u8 = 0x70;
const MOD: u8 = 0x90;
const MOV: u8 = 0xb0;
const END: u8 = 0xd0;
const TO_BE: u8 = 0x08;
const JA: u8 = 0x00;
const CALL: u8 = 0x80;
const EXIT: u8 = 0x90;
/// `bpf_map_lookup_elem`.
const HELPER_MAP_LOOKUP_ELEM: i32 = 1;
/// src_reg of a 64-bit immediate load that holds a map's descriptor.
const PSEUDO_MAP_FD: u8 = 1;

fn regs(dst: Reg, src: Reg) -> u8 {
    if cfg!(target_endian = "little") {
        (src.0 << 4) | (dst.0 & 0x0f)
    } else {
        (dst.0 << 4) | (src.0 & 0x0f)
    }
}

/// A program being built.
#[derive(Debug, Default)]
pub struct Asm {
    insns: Vec<Insn>,
    labels: Vec<Option<usize>>,
    fixups: Vec<(usize, Label)>,
}

impl Asm {
    /// An empty program.
    pub fn new() -> Self {
        Self::default()
    }

    fn push(&mut self, code: u8, dst: Reg, src: Reg, off: i16, imm: i32) -> &mut Self {
        self.insns.push(Insn {
            code,
            regs: regs(dst, src),
            off,
            imm,
        });
        self
    }

    /// A new, not yet placed label.
    pub fn new_label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() - 1)
    }

    /// Places `l` at the next instruction.
    pub fn label(&mut self, l: Label) -> &mut Self {
        self.labels[l.0] = Some(self.insns.len());
        self
    }

    /// dst = imm (64-bit, sign-extended).
    pub fn mov_imm(&mut self, dst: Reg, imm: i32) -> &mut Self {
        self.push(ALU64 | MOV | K, dst, R0, 0, imm)
    }

    /// dst = imm as an unsigned 32-bit value (the upper 32 bits zero).
    pub fn mov32_imm(&mut self, dst: Reg, imm: i32) -> &mut Self {
        self.push(ALU | MOV | K, dst, R0, 0, imm)
    }

    /// dst = src.
    pub fn mov(&mut self, dst: Reg, src: Reg) -> &mut Self {
        self.push(ALU64 | MOV | X, dst, src, 0, 0)
    }

    /// dst += imm.
    pub fn add_imm(&mut self, dst: Reg, imm: i32) -> &mut Self {
        self.push(ALU64 | ADD | K, dst, R0, 0, imm)
    }

    /// dst += src.
    pub fn add(&mut self, dst: Reg, src: Reg) -> &mut Self {
        self.push(ALU64 | ADD | X, dst, src, 0, 0)
    }

    /// dst -= imm.
    pub fn sub_imm(&mut self, dst: Reg, imm: i32) -> &mut Self {
        self.push(ALU64 | SUB | K, dst, R0, 0, imm)
    }

    /// dst -= src.
    pub fn sub(&mut self, dst: Reg, src: Reg) -> &mut Self {
        self.push(ALU64 | SUB | X, dst, src, 0, 0)
    }

    /// dst *= src.
    pub fn mul(&mut self, dst: Reg, src: Reg) -> &mut Self {
        self.push(ALU64 | MUL | X, dst, src, 0, 0)
    }

    /// dst *= imm.
    pub fn mul_imm(&mut self, dst: Reg, imm: i32) -> &mut Self {
        self.push(ALU64 | MUL | K, dst, R0, 0, imm)
    }

    /// dst >>= imm (logical).
    pub fn rsh_imm(&mut self, dst: Reg, imm: i32) -> &mut Self {
        self.push(ALU64 | RSH | K, dst, R0, 0, imm)
    }

    /// dst /= imm (unsigned; the verifier refuses 0).
    pub fn div_imm(&mut self, dst: Reg, imm: i32) -> &mut Self {
        self.push(ALU64 | DIV | K, dst, R0, 0, imm)
    }

    /// dst %= imm (unsigned; the verifier refuses 0).
    pub fn mod_imm(&mut self, dst: Reg, imm: i32) -> &mut Self {
        self.push(ALU64 | MOD | K, dst, R0, 0, imm)
    }

    /// dst = its low 64 bits in big-endian byte order (host order to network order).
    pub fn be64(&mut self, dst: Reg) -> &mut Self {
        self.push(ALU | END | TO_BE, dst, R0, 0, 64)
    }

    /// dst &= imm.
    pub fn and_imm(&mut self, dst: Reg, imm: i32) -> &mut Self {
        self.push(ALU64 | AND | K, dst, R0, 0, imm)
    }

    /// dst = the low 16 bits of dst read as big-endian (network order to host order).
    pub fn be16(&mut self, dst: Reg) -> &mut Self {
        self.push(ALU | END | TO_BE, dst, R0, 0, 16)
    }

    /// dst = *(size *)(src + off).
    pub fn load(&mut self, size: Size, dst: Reg, src: Reg, off: i16) -> &mut Self {
        self.push(LDX | MEM | size as u8, dst, src, off, 0)
    }

    /// *(size *)(dst + off) = src.
    pub fn store(&mut self, size: Size, dst: Reg, off: i16, src: Reg) -> &mut Self {
        self.push(STX | MEM | size as u8, dst, src, off, 0)
    }

    /// *(size *)(dst + off) = imm.
    pub fn store_imm(&mut self, size: Size, dst: Reg, off: i16, imm: i32) -> &mut Self {
        self.push(ST | MEM | size as u8, dst, R0, off, imm)
    }

    /// dst = the map with descriptor `fd` (a two-instruction 64-bit immediate load).
    pub fn load_map_fd(&mut self, dst: Reg, fd: i32) -> &mut Self {
        self.push(LD | IMM | Size::DW as u8, dst, Reg(PSEUDO_MAP_FD), 0, fd);
        self.push(0, R0, R0, 0, 0)
    }

    /// `if dst COND imm goto to`.
    pub fn jump_imm(&mut self, cond: Cond, dst: Reg, imm: i32, to: Label) -> &mut Self {
        self.fixups.push((self.insns.len(), to));
        self.push(JMP | cond as u8 | K, dst, R0, 0, imm)
    }

    /// `if dst COND src goto to`.
    pub fn jump_reg(&mut self, cond: Cond, dst: Reg, src: Reg, to: Label) -> &mut Self {
        self.fixups.push((self.insns.len(), to));
        self.push(JMP | cond as u8 | X, dst, src, 0, 0)
    }

    /// goto to.
    pub fn goto(&mut self, to: Label) -> &mut Self {
        self.fixups.push((self.insns.len(), to));
        self.push(JMP | JA, R0, R0, 0, 0)
    }

    /// `r0 = bpf_map_lookup_elem(map, &key)`, and `goto miss` when it is null (the key in the
    /// stack's top 4 bytes; r1..r5 clobbered, as by any call): the verifier needs the null
    /// check before r0 is read.
    pub fn lookup(&mut self, map: i32, key: u32, miss: Label) -> &mut Self {
        self.store_imm(Size::W, R10, -4, key as i32)
            .lookup_stored(map, miss)
    }

    /// [`Asm::lookup`] with the key in register `key` (its low 32 bits).
    pub fn lookup_reg(&mut self, map: i32, key: Reg, miss: Label) -> &mut Self {
        self.store(Size::W, R10, -4, key).lookup_stored(map, miss)
    }

    /// The lookup of the key already in the stack's top 4 bytes.
    fn lookup_stored(&mut self, map: i32, miss: Label) -> &mut Self {
        self.load_map_fd(R1, map)
            .mov(R2, R10)
            .add_imm(R2, -4)
            .call(HELPER_MAP_LOOKUP_ELEM)
            .jump_imm(Cond::Eq, R0, 0, miss)
    }

    /// Calls helper number `id` (arguments in r1..r5, result in r0; r1..r5 clobbered).
    pub fn call(&mut self, id: i32) -> &mut Self {
        self.push(JMP | CALL, R0, R0, 0, id)
    }

    /// Returns r0.
    pub fn exit(&mut self) -> &mut Self {
        self.push(JMP | EXIT, R0, R0, 0, 0)
    }

    /// The instructions, every jump resolved; `None` if a label used was never placed or a
    /// jump is out of the 16-bit range (a bug in the program's source, caught by its tests).
    pub fn finish(mut self) -> Option<Vec<Insn>> {
        for (at, l) in std::mem::take(&mut self.fixups) {
            let target = (*self.labels.get(l.0)?)?;
            let off = i16::try_from(target as i64 - at as i64 - 1).ok()?;
            self.insns[at].off = off;
        }
        Some(self.insns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_match_the_kernels_for_a_few_known_instructions() {
        // Byte values as in the kernel's own filter.h macros (e.g. BPF_MOV64_IMM(BPF_REG_0, 2)
        // is code 0xb7, dst 0, imm 2; BPF_EXIT_INSN is 0x95).
        let mut a = Asm::new();
        let l = a.new_label();
        a.mov_imm(R0, 2)
            .load(Size::W, R2, R1, 4)
            .jump_imm(Cond::Ne, R5, 17, l)
            .be16(R5)
            .load_map_fd(R1, 7)
            .label(l)
            .exit();
        let p = a.finish().unwrap();
        assert_eq!(
            p[0],
            Insn {
                code: 0xb7,
                regs: 0x00,
                off: 0,
                imm: 2
            }
        );
        assert_eq!(
            p[1],
            Insn {
                code: 0x61,
                regs: 0x12,
                off: 4,
                imm: 0
            }
        );
        assert_eq!(
            p[2],
            Insn {
                code: 0x55,
                regs: 0x05,
                off: 3,
                imm: 17
            }
        );
        assert_eq!(
            p[3],
            Insn {
                code: 0xdc,
                regs: 0x05,
                off: 0,
                imm: 16
            }
        );
        assert_eq!(
            p[4],
            Insn {
                code: 0x18,
                regs: 0x11,
                off: 0,
                imm: 7
            }
        );
        assert_eq!(p[5], Insn::default());
        assert_eq!(
            p[6],
            Insn {
                code: 0x95,
                regs: 0,
                off: 0,
                imm: 0
            }
        );
    }

    #[test]
    fn the_arithmetic_encodings_are_the_kernels() {
        // filter.h: BPF_ALU64_IMM(BPF_RSH, ..) 0x77, (BPF_DIV) 0x37, (BPF_MOD) 0x97,
        // BPF_ALU64_REG(BPF_SUB, ..) 0x1f, BPF_ENDIAN(BPF_TO_BE, .., 64) 0xdc with imm 64,
        // BPF_MOV32_IMM 0xb4.
        let mut a = Asm::new();
        a.rsh_imm(R1, 8)
            .div_imm(R2, 100)
            .mod_imm(R3, 100)
            .sub(R8, R9)
            .be64(R9)
            .mov32_imm(R4, -58);
        let got: Vec<(u8, u8, i32)> = (a.finish().unwrap().iter())
            .map(|i| (i.code, i.regs, i.imm))
            .collect();
        let want = [
            (0x77, 0x01, 8),
            (0x37, 0x02, 100),
            (0x97, 0x03, 100),
            (0x1f, 0x98, 0),
            (0xdc, 0x09, 64),
            (0xb4, 0x04, -58),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn an_unplaced_label_is_none_not_a_bad_program() {
        let mut a = Asm::new();
        let l = a.new_label();
        a.goto(l);
        assert!(a.finish().is_none());
    }
}
