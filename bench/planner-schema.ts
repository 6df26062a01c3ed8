// The planner reply schema the constrained-decoding benchmarks use: a tool from an enum and a sub-goal.
export const PLANNER_SCHEMA = JSON.stringify({
  type: 'object',
  properties: {
    tool_name: { enum: ['Python_Coder_Tool', 'Wikipedia_Search', 'Unit_Converter', 'Fact_Lookup'] },
    sub_goal: { type: 'string', maxLength: 40 },
  },
  required: ['tool_name', 'sub_goal'],
});
