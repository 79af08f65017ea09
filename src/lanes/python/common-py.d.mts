/** The Python both Python lanes run before a snippet (see common-py.mjs). */
export declare const COMMON_PY: string;
