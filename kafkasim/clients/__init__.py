"""clients"""
