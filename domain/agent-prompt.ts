/**
 * The heading that opens the job's instruction in the agent's prompt. The fake model finds the instruction by it, so
 * the prompt and the fake provider share this one constant.
 */
export const instructionHeading = '## Instruction';
